"""Capabilities: hooks around a run, its model requests and its tool calls.

Storage, the replay gate, memory and history processing are all capabilities. A capability
subclasses `AbstractCapability` and overrides the hooks it needs; the defaults do nothing.

Order: `before_*` hooks run in the order the capabilities were given, `after_*` and `on_*_error`
hooks in reverse (the first capability wraps the others). A `before_run` hook may refuse a run by
raising; an `on_*_error` hook re-raises the error (the default) or returns a replacement result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..messages import ModelMessage, ModelResponse, ToolCallPart
from ..models import Model, ModelRequestParameters, ModelSettings, ToolDefinition

if TYPE_CHECKING:
    from ..agent._context import RunContext
    from ..agent._graph import AgentNode, NodeResult
    from ..agent._result import AgentRunResult

__all__ = ['AbstractCapability', 'ModelRequestContext']


@dataclass
class ModelRequestContext:
    """One model request about to be sent: a `before_model_request` hook may replace any field.

    `messages` is the copy sent to the model; replacing it changes only this request (write
    `ctx.messages` to change the stored history).
    """

    model: Model
    messages: list[ModelMessage]
    model_settings: ModelSettings | None
    model_request_parameters: ModelRequestParameters
    metadata: dict[str, Any] = field(default_factory=dict)


class AbstractCapability:
    """Base class of capabilities; every hook is a no-op until overridden."""

    async def before_run(self, ctx: RunContext[Any]) -> None:
        """Called once before the first node; raise to refuse the run."""

    async def after_run(self, ctx: RunContext[Any], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        """Called once after the run produced its result; may return a different result."""
        return result

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> AgentRunResult[Any]:
        """Called when the run failed; re-raise (the default) or return a result to recover."""
        raise error

    async def after_node_run(self, ctx: RunContext[Any], *, node: AgentNode, result: NodeResult) -> NodeResult:
        """Called after each node ran with the node that comes next (or `End`)."""
        return result

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Called before each model request; may change what is sent."""
        return request_context

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        """Called with each response before the run acts on it."""
        return response

    async def on_model_request_error(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        """Called when a model request failed; re-raise or return a response to use instead."""
        raise error

    async def before_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any]
    ) -> dict[str, Any]:
        """Called before a tool body runs, with its validated arguments; may change them or raise."""
        return args

    async def after_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any], result: Any
    ) -> Any:
        """Called with a tool's result; may return a different one."""
        return result

    async def on_tool_execute_error(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        error: Exception,
    ) -> Any:
        """Called when a tool body raised (including `ModelRetry`); re-raise or return a result."""
        raise error
