"""Running agents over a message history: `Agent`, `RunContext`, results, tools, usage limits."""

from __future__ import annotations

from .._public import publish
from ._agent import Agent, RunOptions
from ._capture import capture_run_messages
from ._context import RunContext
from ._event_handler import EventStreamHandler
from ._graph import AgentNode, CallToolsNode, End, FinalResult, ModelRequestNode, NodeResult, UserPromptNode
from ._limits import UsageLimits
from ._output import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from ._output_types import NativeOutput, PromptedOutput, TextOutput, ToolOutput
from ._result import AgentRunResult, RunResult
from ._run import AgentRun
from ._streamed import EventStream, RunCancelled, StreamedRunResult
from ._streamed_sync import StreamedRunResultSync
from ._tools import Tool

__all__ = [
    'capture_run_messages',
    'Agent',
    'AgentNode',
    'AgentRun',
    'AgentRunResult',
    'CallToolsNode',
    'DeferredToolRequests',
    'ToolOutput',
    'TextOutput',
    'PromptedOutput',
    'NativeOutput',
    'DeferredToolResults',
    'End',
    'EventStream',
    'EventStreamHandler',
    'FinalResult',
    'ModelRequestNode',
    'NodeResult',
    'RunContext',
    'RunOptions',
    'RunCancelled',
    'RunResult',
    'StreamedRunResult',
    'StreamedRunResultSync',
    'Tool',
    'ToolApproved',
    'ToolDenied',
    'UsageLimits',
    'UserPromptNode',
]


publish(__name__, globals(), __all__)  # after every name above exists
