"""Threadline: the conversation history of LLM agents, run, kept valid, stored and audited."""

from __future__ import annotations

from threadline._public import publish
from threadline.agent import (
    Agent,
    AgentRun,
    AgentRunResult,
    CallToolsNode,
    DeferredToolRequests,
    DeferredToolResults,
    End,
    FinalResult,
    ModelRequestNode,
    NativeOutput,
    PromptedOutput,
    RunCancelled,
    RunContext,
    RunResult,
    StreamedRunResult,
    StreamedRunResultSync,
    TextOutput,
    Tool,
    ToolApproved,
    ToolDenied,
    ToolOutput,
    UsageLimits,
    UserPromptNode,
    capture_run_messages,
)
from threadline.capabilities import MessageHistoryMutatedWarning
from threadline.exceptions import (
    AgentRunError,
    ApprovalRequired,
    CallDeferred,
    MessageValidationError,
    ModelRetry,
    ThreadlineError,
    UndrainedPendingMessagesError,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
    UserError,
)
from threadline.messages import (
    AudioUrl,
    BinaryContent,
    BinaryImage,
    CachePoint,
    DocumentUrl,
    ImageUrl,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RequestUsage,
    RetryPromptPart,
    RunUsage,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturn,
    ToolReturnPart,
    UserPromptPart,
    VideoUrl,
    to_json,
    to_jsonable_python,
)

__all__ = [
    'Agent',
    'ConversationSearch',
    'Memory',
    'AgentRun',
    'AgentRunError',
    'AgentRunResult',
    'ApprovalRequired',
    'AudioUrl',
    'BinaryContent',
    'BinaryImage',
    'CallDeferred',
    'CachePoint',
    'CallToolsNode',
    'DeferredToolRequests',
    'ToolOutput',
    'TextOutput',
    'PromptedOutput',
    'NativeOutput',
    'DeferredToolResults',
    'DocumentUrl',
    'End',
    'FinalResult',
    'ImageUrl',
    'MessageHistoryMutatedWarning',
    'MessageValidationError',
    'ModelMessage',
    'ModelMessagesTypeAdapter',
    'ModelRequest',
    'ModelRequestNode',
    'ModelResponse',
    'ModelRetry',
    'RequestUsage',
    'RetryPromptPart',
    'RunContext',
    'RunCancelled',
    'RunResult',
    'StreamedRunResult',
    'StreamedRunResultSync',
    'UndrainedPendingMessagesError',
    'RunUsage',
    'SystemPromptPart',
    'TextContent',
    'TextPart',
    'ThinkingPart',
    'ThreadlineError',
    'Tool',
    'ToolApproved',
    'ToolCallPart',
    'ToolDenied',
    'ToolReturn',
    'ToolReturnPart',
    'UnexpectedModelBehavior',
    'UsageLimitExceeded',
    'UsageLimits',
    'UserError',
    'UserPromptNode',
    'UserPromptPart',
    'capture_run_messages',
    'VideoUrl',
    'to_json',
    'to_jsonable_python',
]


publish(__name__, globals(), __all__)  # after every name above exists


def __getattr__(name: str) -> object:
    # Recall and memory live beside the storage layer, which a plain `import threadline` does not load.
    if name == 'ConversationSearch':
        from threadline.search import ConversationSearch

        return ConversationSearch
    if name == 'Memory':
        from threadline.memory import Memory

        return Memory
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
