"""Running agents over a message history: `Agent`, `RunContext`, results, tools, usage limits."""

from __future__ import annotations

from ._agent import Agent, RunOptions
from ._context import RunContext
from ._graph import AgentNode, CallToolsNode, End, FinalResult, ModelRequestNode, NodeResult, UserPromptNode
from ._limits import UsageLimits
from ._output import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from ._result import AgentRunResult, RunResult
from ._run import AgentRun
from ._streamed import RunCancelled, StreamedRunResult
from ._tools import Tool

__all__ = [
    'Agent',
    'AgentNode',
    'AgentRun',
    'AgentRunResult',
    'CallToolsNode',
    'DeferredToolRequests',
    'DeferredToolResults',
    'End',
    'FinalResult',
    'ModelRequestNode',
    'NodeResult',
    'RunContext',
    'RunOptions',
    'RunCancelled',
    'RunResult',
    'StreamedRunResult',
    'Tool',
    'ToolApproved',
    'ToolDenied',
    'UsageLimits',
    'UserPromptNode',
]

from .._public import publish  # noqa: E402 - runs once every name above exists

publish(__name__, globals(), __all__)
