"""Running agents over a message history: `Agent`, `RunContext`, results, tools, usage limits."""

from __future__ import annotations

from threadline._public import publish
from threadline.agent._agent import Agent, RunOptions
from threadline.agent._capture import capture_run_messages
from threadline.agent._context import CrashRetry, RunContext
from threadline.agent._event_handler import EventStreamHandler
from threadline.agent._graph import (
    AgentNode,
    CallToolsNode,
    End,
    FinalResult,
    ModelRequestNode,
    NodeResult,
    UserPromptNode,
)
from threadline.agent._limits import UsageLimits
from threadline.agent._result import AgentRunResult, RunResult
from threadline.agent._run import AgentRun
from threadline.agent._run_events import EventStream
from threadline.agent._streamed import RunCancelled, StreamedRunResult
from threadline.agent._streamed_sync import StreamedRunResultSync
from threadline.agent.output._deferred_types import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from threadline.agent.output._types import NativeOutput, PromptedOutput, TextOutput, ToolOutput
from threadline.agent.tools._tool import Tool

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
    'CrashRetry',
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
