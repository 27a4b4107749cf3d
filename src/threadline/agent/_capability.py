"""The capability interface and the one place that calls its hooks.

Storage, the replay gate, memory and history processing are all capabilities. A capability
subclasses `AbstractCapability` (re-exported from `threadline.capabilities`) and overrides the
hooks it needs; the defaults do nothing. The interface lives in the agent package because the
agent calls it: `threadline.capabilities` builds on the agent, never the other way round.

`CapabilityChain` holds the rules for calling hooks, so the run, the graph and the stream never
loop over capabilities themselves:
- `before_*` hooks run in the order the capabilities were given; `after_*` and `on_*_error` hooks
  in reverse, so the first capability wraps the others.
- A `before_*` / `after_*` hook that returns None leaves the value as it was (`after_tool_execute`
  excepted: a tool result may legitimately be None, so its return value is always taken).
- `before_run` may refuse the run by raising.
- An error goes to each `on_*_error` hook in turn: the first to return a value recovers, and one
  that raises hands the next hook what it raised; if none recovers, the last error propagates.
- A cancelled run is announced to every `on_run_error` hook; none can stop the others hearing it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..messages import ModelMessage, ModelResponse, ToolCallPart
from ..models import Model, ModelRequestParameters, ModelSettings, ToolDefinition
from ._context import AgentDepsT

if TYPE_CHECKING:
    from ._context import RunContext
    from ._graph import AgentNode, NodeResult
    from ._result import AgentRunResult
    from ._toolset import FunctionToolset

__all__ = ['AbstractCapability', 'CapabilityChain', 'ModelRequestContext']

T = TypeVar('T')


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


class AbstractCapability(Generic[AgentDepsT]):
    """Base class of capabilities; every hook is a no-op until overridden. Generic in the run's
    deps type (`AbstractCapability[MyDeps]`), as the hooks' `RunContext` is."""

    id: str | None = None
    """Names the capability in a run; required with `defer_loading`, as the history names it."""
    description: str | None = None
    """What it does, listed in the catalog of deferred capabilities."""
    defer_loading: bool = False
    """Keep its tools, instructions and hooks out of the run until the model loads it with the
    `load_capability` tool (see `threadline.agent._load`)."""

    def get_toolset(self) -> FunctionToolset[Any] | None:
        """Tools this capability gives every run it is part of (None: no tools)."""
        return None

    def get_instructions(self) -> str | None:
        """Instructions this capability adds to every request while it is active (None: none)."""
        return None

    async def before_run(self, ctx: RunContext[Any]) -> None:
        """Called once before the first node; raise to refuse the run."""

    async def after_run(self, ctx: RunContext[Any], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        """Called once after the run produced its result; may return a different result."""
        return result

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> AgentRunResult[Any]:
        """Called when the run failed; re-raise (the default) or return a result to recover."""
        raise error

    async def _settle(self, ctx: RunContext[Any]) -> None:
        """Internal: awaited when the run is left by any path (cancellation and `BaseException`
        included), for work a capability started and has not awaited yet. Errors are ignored here:
        the hooks that await the same work report them."""

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


class CapabilityChain(Sequence[AbstractCapability[Any]]):
    """The capabilities of one run, and the rules for calling their hooks (see the module docstring)."""

    def __init__(self, capabilities: Sequence[AbstractCapability[Any]] = ()) -> None:
        from ._load import check_deferred

        self._all = tuple(capabilities)
        self.deferred = check_deferred(self._all)
        self.loaded: frozenset[str] = frozenset()
        self._forward = tuple(c for c in self._all if not c.defer_loading)
        self._reverse = self._forward[::-1]

    def set_loaded(self, loaded: set[str] | frozenset[str]) -> None:
        """Which deferred capabilities are loaded: only those (and every capability not deferred)
        have their hooks called."""
        loaded = frozenset(loaded) & self.deferred.keys()
        if loaded == self.loaded:
            return
        self.loaded = loaded
        self._forward = tuple(c for c in self._all if not c.defer_loading or c.id in loaded)
        self._reverse = self._forward[::-1]

    def instructions(self) -> list[str]:
        """The deferred-capability catalog, then each active capability's instructions."""
        from ._load import catalog

        texts = [catalog(self.deferred)] if self.deferred else []
        texts.extend(text for c in self._forward if (text := c.get_instructions()))
        return texts

    def __len__(self) -> int:
        return len(self._all)

    def __getitem__(self, index: Any) -> Any:
        return self._all[index]

    def __iter__(self) -> Iterator[AbstractCapability[Any]]:
        return iter(self._all)

    async def before_run(self, ctx: RunContext[Any]) -> None:
        for capability in self._forward:
            await capability.before_run(ctx)

    def toolsets(self) -> list[tuple[str, FunctionToolset[Any]]]:
        """Each capability's toolset, named by the capability that gives it."""
        named = []
        tools_of: dict[str, list[str]] = {}
        for capability in self._all:
            toolset = capability.get_toolset()
            if toolset is None:
                continue
            if capability.defer_loading:
                assert capability.id is not None  # check_deferred refused it otherwise
                toolset = toolset.owned_by(capability.id)
                tools_of[capability.id] = list(toolset.tools)
            named.append((f'capability {type(capability).__name__}', toolset))
        if self.deferred:
            from ._load import load_tool
            from ._toolset import FunctionToolset

            named.append(('deferred capability loading', FunctionToolset([load_tool(self.deferred, tools_of)])))
        return named

    async def settle(self, ctx: RunContext[Any]) -> None:
        for capability in self._reverse:
            with contextlib.suppress(Exception):
                await capability._settle(ctx)

    async def after_run(self, ctx: RunContext[Any], result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        for capability in self._reverse:
            result = _kept(await capability.after_run(ctx, result=result), result)
        return result

    async def on_run_error(self, ctx: RunContext[Any], error: Exception) -> AgentRunResult[Any]:
        for capability in self._reverse:
            try:
                return await capability.on_run_error(ctx, error=error)
            except Exception as raised:  # noqa: BLE001 - the next handler sees what this one raised
                error = raised
        raise error

    async def announce_cancelled(self, ctx: RunContext[Any], error: Exception) -> None:
        for capability in self._reverse:
            try:
                await capability.on_run_error(ctx, error=error)
            except Exception:  # noqa: BLE001 - every capability hears it; none may stop the others
                continue

    async def after_node_run(self, ctx: RunContext[Any], node: AgentNode, result: NodeResult) -> NodeResult:
        for capability in self._reverse:
            result = _kept(await capability.after_node_run(ctx, node=node, result=result), result)
        return result

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        for capability in self._forward:
            request_context = _kept(await capability.before_model_request(ctx, request_context), request_context)
        return request_context

    async def after_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        for capability in self._reverse:
            changed = await capability.after_model_request(ctx, request_context=request_context, response=response)
            response = _kept(changed, response)
        return response

    async def on_model_request_error(
        self, ctx: RunContext[Any], request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        for capability in self._reverse:
            try:
                return await capability.on_model_request_error(ctx, request_context=request_context, error=error)
            except Exception as raised:  # noqa: BLE001 - the next handler sees what this one raised
                error = raised
        raise error

    async def before_tool_execute(
        self, ctx: RunContext[Any], call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any]
    ) -> dict[str, Any]:
        for capability in self._forward:
            args = _kept(await capability.before_tool_execute(ctx, call=call, tool_def=tool_def, args=args), args)
        return args

    async def after_tool_execute(
        self, ctx: RunContext[Any], call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any], result: Any
    ) -> Any:
        for capability in self._reverse:
            result = await capability.after_tool_execute(ctx, call=call, tool_def=tool_def, args=args, result=result)
        return result

    async def on_tool_execute_error(
        self, ctx: RunContext[Any], call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any], error: Exception
    ) -> Any:
        for capability in self._reverse:
            try:
                return await capability.on_tool_execute_error(ctx, call=call, tool_def=tool_def, args=args, error=error)
            except Exception as raised:  # noqa: BLE001 - the next handler sees what this one raised
                error = raised
        raise error


def _kept(changed: T | None, current: T) -> T:
    """A hook's return value, or the current value when the hook returned None."""
    return current if changed is None else changed
