"""`CapabilityChain`: the capabilities of one run, and the one place that calls their hooks.

The run, the graph, the tool step and the stream never loop over capabilities themselves. Rules:
- `before_*` hooks run in the order the capabilities were given; `after_*` and `on_*_error`
  hooks in reverse, so the first capability encloses the others. `wrap_*` hooks nest the same
  way: the first capability's wrap is outermost, and the innermost handler runs the lifecycle
  (all `before_*`, the work with `on_*_error` recovery, all `after_*`).
- A `before_*` / `after_*` hook that returns None leaves the value as it was (`after_tool_execute`
  excepted: a tool result may legitimately be None, so its return value is always taken).
- `before_run` may refuse the run by raising.
- An error goes to each `on_*_error` hook in turn: the first to return a value recovers, and one
  that raises hands the next hook what it raised; if none recovers, the last error propagates.
- A cancelled run is announced to every `on_run_error` hook; none can stop the others hearing it.
- Only the hooks a capability overrides are called (`AbstractCapability.overridden_hooks`).
- A `CombinedCapability` counts as its capabilities, in its order, where it stands.
- A deferred capability (`defer_loading`) takes part only while it is loaded (`set_loaded`).
- The capabilities are first sorted by their `get_ordering()` constraints (`_ordering`).
- What capabilities give besides hooks (tools, wrappers, the event stream) is `ChainGives`'.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

from threadline.agent._capability import HOOKS, PROVIDERS, AbstractCapability, ModelRequestContext
from threadline.agent._chain_gives import ChainGives
from threadline.agent._context import AgentDepsT
from threadline.agent._ordering import sort_capabilities
from threadline.agent.output._deferred_types import DeferredToolResults
from threadline.agent.tools._load import check_deferred
from threadline.messages import ModelResponse, ToolCallPart
from threadline.models import ToolDefinition

if TYPE_CHECKING:
    from threadline.agent._context import RunContext
    from threadline.agent._graph import AgentNode, NodeResult
    from threadline.agent._result import AgentRunResult
    from threadline.agent.output._deferred_types import DeferredToolRequests
    from threadline.agent.output._output import OutputContext

__all__ = ['CapabilityChain', 'flatten']

T = TypeVar('T')
A = TypeVar('A')
R = TypeVar('R')
RawArgs = str | dict[str, Any] | None
RunStep = Callable[[], Awaitable['AgentRunResult[Any]']]
NodeStep = Callable[['AgentNode'], Awaitable['NodeResult']]
RequestStep = Callable[[ModelRequestContext], Awaitable[ModelResponse]]
OutputStep = Callable[[Any], Awaitable[Any]]
"""One output lifecycle's work on the output value (of the run's output type, which the chain does not know)."""


def flatten(capabilities: Sequence[AbstractCapability[AgentDepsT]]) -> list[AbstractCapability[AgentDepsT]]:
    """`capabilities` with each `CombinedCapability` replaced by its members, in place."""
    out: list[AbstractCapability[AgentDepsT]] = []
    for capability in capabilities:
        members = getattr(capability, 'combined', None)
        if members is not None:
            out.extend(flatten(members))
        else:
            out.append(capability)
    return out


class CapabilityChain(ChainGives[AgentDepsT], Sequence[AbstractCapability[AgentDepsT]]):
    """The capabilities of one run, and the rules for calling their hooks (see the module docstring)."""

    def __init__(self, capabilities: Sequence[AbstractCapability[AgentDepsT]] = (), *, run_level: int = 0) -> None:
        """`run_level`: how many of `capabilities` (at its end, flattened) came with the run."""
        given = flatten(capabilities)
        self._run_level = frozenset(id(c) for c in given[len(given) - run_level :]) if run_level else frozenset()
        self._all = tuple(sort_capabilities(given))
        self.deferred = check_deferred(self._all)
        self.loaded: frozenset[str] = frozenset()
        self._activate(tuple(c for c in self._all if not c.defer_loading))

    def _activate(self, active: tuple[AbstractCapability[AgentDepsT], ...]) -> None:
        self._forward = active
        hooked: dict[str, list[AbstractCapability[AgentDepsT]]] = {name: [] for name in (*HOOKS, *PROVIDERS)}
        for capability in active:
            for name in capability.overridden_hooks():
                hooked[name].append(capability)
        self._hooked = {name: tuple(caps) for name, caps in hooked.items()}
        self._reversed = {name: caps[::-1] for name, caps in self._hooked.items()}

    def has(self, hook: str) -> bool:
        """Whether any active capability implements `hook`."""
        return bool(self._hooked[hook])

    def streams_in_request(self) -> bool:
        """Whether an active capability asks a handler's stream to run inside the model request."""
        return any(c.streams_in_model_request for c in self._forward)

    def set_loaded(self, loaded: set[str] | frozenset[str]) -> None:
        """Which deferred capabilities are loaded: only those (and every capability not deferred)
        have their hooks called."""
        loaded = frozenset(loaded) & self.deferred.keys()
        if loaded != self.loaded:
            self.loaded = loaded
            self._activate(tuple(c for c in self._all if not c.defer_loading or c.id in loaded))

    def __len__(self) -> int:
        return len(self._all)

    @overload
    def __getitem__(self, index: int) -> AbstractCapability[AgentDepsT]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[AbstractCapability[AgentDepsT]]: ...

    def __getitem__(
        self, index: int | slice
    ) -> AbstractCapability[AgentDepsT] | Sequence[AbstractCapability[AgentDepsT]]:
        return self._all[index]

    def __iter__(self) -> Iterator[AbstractCapability[AgentDepsT]]:
        return iter(self._all)

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> CapabilityChain[AgentDepsT]:
        """The chain of each capability's `for_run` instance (this chain when none changes). The
        capabilities that came with the run are asked first, as pydantic-ai asks them; the
        chain's order stays (sorted again: a new instance no longer matches refs to the old)."""
        n = len(self._all)
        order = sorted(range(n), key=lambda i: id(self._all[i]) not in self._run_level)
        made = {i: await self._all[i].for_run(ctx) for i in order}
        instances = [made[i] for i in range(len(self._all))]
        if all(new is old for new, old in zip(instances, self._all, strict=True)):
            return self
        chain = CapabilityChain(instances)
        chain.set_loaded(self.loaded)
        return chain

    # --- the run ---------------------------------------------------------------------------------

    async def before_run(self, ctx: RunContext[AgentDepsT]) -> None:
        for capability in self._hooked['before_run']:
            await capability.before_run(ctx)

    async def after_run(self, ctx: RunContext[AgentDepsT], result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        for capability in self._reversed['after_run']:
            result = _kept(await capability.after_run(ctx, result=result), result)
        return result

    async def on_run_error(self, ctx: RunContext[AgentDepsT], error: Exception) -> AgentRunResult[Any]:
        for capability in self._reversed['on_run_error']:
            try:
                return await capability.on_run_error(ctx, error=error)
            except Exception as raised:  # noqa: BLE001 - the next handler sees what this one raised
                error = raised
        raise error

    async def announce_cancelled(self, ctx: RunContext[AgentDepsT], error: Exception) -> None:
        for capability in self._reversed['on_run_error']:
            try:
                await capability.on_run_error(ctx, error=error)
            except Exception:  # noqa: BLE001 - every capability hears it; none may stop the others
                continue

    async def wrap_run(
        self, ctx: RunContext[AgentDepsT], handler: Callable[[], Awaitable[AgentRunResult[Any]]]
    ) -> AgentRunResult[Any]:
        for capability in self._reversed['wrap_run']:
            handler = _bind_run(capability, ctx, handler)
        return await handler()

    # --- nodes -----------------------------------------------------------------------------------

    async def before_node_run(self, ctx: RunContext[AgentDepsT], node: AgentNode) -> AgentNode:
        for capability in self._hooked['before_node_run']:
            node = _kept(await capability.before_node_run(ctx, node=node), node)
        return node

    async def after_node_run(self, ctx: RunContext[AgentDepsT], node: AgentNode, result: NodeResult) -> NodeResult:
        for capability in self._reversed['after_node_run']:
            result = _kept(await capability.after_node_run(ctx, node=node, result=result), result)
        return result

    async def on_node_run_error(self, ctx: RunContext[AgentDepsT], node: AgentNode, error: Exception) -> NodeResult:
        for capability in self._reversed['on_node_run_error']:
            try:
                return await capability.on_node_run_error(ctx, node=node, error=error)
            except Exception as raised:  # noqa: BLE001 - the next handler sees what this one raised
                error = raised
        raise error

    async def wrap_node_run(
        self, ctx: RunContext[AgentDepsT], node: AgentNode, handler: Callable[[AgentNode], Awaitable[NodeResult]]
    ) -> NodeResult:
        for capability in self._reversed['wrap_node_run']:
            handler = _bind_node(capability, ctx, handler)
        return await handler(node)

    # --- model requests --------------------------------------------------------------------------

    async def before_model_request(
        self, ctx: RunContext[AgentDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        for capability in self._hooked['before_model_request']:
            request_context = _kept(await capability.before_model_request(ctx, request_context), request_context)
        return request_context

    async def after_model_request(
        self, ctx: RunContext[AgentDepsT], request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        for capability in self._reversed['after_model_request']:
            changed = await capability.after_model_request(ctx, request_context=request_context, response=response)
            response = _kept(changed, response)
        return response

    async def on_model_request_error(
        self, ctx: RunContext[AgentDepsT], request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        for capability in self._reversed['on_model_request_error']:
            try:
                return await capability.on_model_request_error(ctx, request_context=request_context, error=error)
            except Exception as raised:  # noqa: BLE001 - the next handler sees what this one raised
                error = raised
        raise error

    async def wrap_model_request(
        self,
        ctx: RunContext[AgentDepsT],
        request_context: ModelRequestContext,
        handler: Callable[[ModelRequestContext], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        for capability in self._reversed['wrap_model_request']:
            handler = _bind_request(capability, ctx, handler)
        return await handler(request_context)

    # --- tool validation -------------------------------------------------------------------------

    async def before_tool_validate(
        self, ctx: RunContext[AgentDepsT], call: ToolCallPart, tool_def: ToolDefinition, args: RawArgs
    ) -> RawArgs:
        for capability in self._hooked['before_tool_validate']:
            args = _kept(await capability.before_tool_validate(ctx, call=call, tool_def=tool_def, args=args), args)
        return args

    async def after_tool_validate(
        self, ctx: RunContext[AgentDepsT], call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any]
    ) -> dict[str, Any]:
        for capability in self._reversed['after_tool_validate']:
            args = _kept(await capability.after_tool_validate(ctx, call=call, tool_def=tool_def, args=args), args)
        return args

    async def on_tool_validate_error(
        self, ctx: RunContext[AgentDepsT], call: ToolCallPart, tool_def: ToolDefinition, args: RawArgs, error: Exception
    ) -> dict[str, Any]:
        for capability in self._reversed['on_tool_validate_error']:
            try:
                return await capability.on_tool_validate_error(
                    ctx, call=call, tool_def=tool_def, args=args, error=error
                )
            except Exception as raised:  # noqa: BLE001 - the next handler sees what this one raised
                error = raised
        raise error

    async def wrap_tool_validate(
        self,
        ctx: RunContext[AgentDepsT],
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: RawArgs,
        handler: Callable[[RawArgs], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        for capability in self._reversed['wrap_tool_validate']:
            handler = _bind_tool(capability, 'wrap_tool_validate', ctx, call, tool_def, handler)
        return await handler(args)

    # --- tool execution --------------------------------------------------------------------------

    async def before_tool_execute(
        self, ctx: RunContext[AgentDepsT], call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any]
    ) -> dict[str, Any]:
        for capability in self._hooked['before_tool_execute']:
            args = _kept(await capability.before_tool_execute(ctx, call=call, tool_def=tool_def, args=args), args)
        return args

    async def after_tool_execute(
        self,
        ctx: RunContext[AgentDepsT],
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        result: Any,
    ) -> Any:
        for capability in self._reversed['after_tool_execute']:
            result = await capability.after_tool_execute(ctx, call=call, tool_def=tool_def, args=args, result=result)
        return result

    async def on_tool_execute_error(
        self,
        ctx: RunContext[AgentDepsT],
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        error: Exception,
    ) -> Any:
        for capability in self._reversed['on_tool_execute_error']:
            try:
                return await capability.on_tool_execute_error(ctx, call=call, tool_def=tool_def, args=args, error=error)
            except Exception as raised:  # noqa: BLE001 - the next handler sees what this one raised
                error = raised
        raise error

    async def wrap_tool_execute(
        self,
        ctx: RunContext[AgentDepsT],
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        return await self._wrapped_tool('wrap_tool_execute', ctx, call, tool_def, args, handler)

    async def wrap_tool_body(
        self,
        ctx: RunContext[AgentDepsT],
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        return await self._wrapped_tool('wrap_tool_body', ctx, call, tool_def, args, handler)

    async def _wrapped_tool(
        self,
        hook: str,
        ctx: RunContext[AgentDepsT],
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        """`handler` inside every capability's `hook` (the first capability outermost)."""
        for capability in self._reversed[hook]:
            handler = _bind_tool(capability, hook, ctx, call, tool_def, handler)
        return await handler(args)

    # --- output ------------------------------------------------------------------------------------

    def has_output_hooks(self) -> bool:
        return any(self._hooked[name] for name in HOOKS if '_output_validate' in name or '_output_process' in name)

    async def output_lifecycle(
        self, ctx: RunContext[AgentDepsT], step: str, context: OutputContext, output: Any, work: OutputStep
    ) -> Any:
        """One output lifecycle (`step` is 'validate' or 'process'): the wraps around `before_*`,
        `work` (its errors to `on_*_error`), `after_*`, by the rules of the other lifecycles."""

        async def lifecycle(value: Any) -> Any:
            for capability in self._hooked[f'before_output_{step}']:
                hook = getattr(capability, f'before_output_{step}')
                value = await hook(ctx, output_context=context, output=value)
            try:
                result = await work(value)
            except Exception as error:  # noqa: BLE001 - error hooks may recover; otherwise re-raised
                result = await self._output_error(ctx, step, context, value, error)
            for capability in self._reversed[f'after_output_{step}']:
                hook = getattr(capability, f'after_output_{step}')
                result = await hook(ctx, output_context=context, output=result)
            return result

        handler: OutputStep = lifecycle
        for capability in self._reversed[f'wrap_output_{step}']:
            handler = _bind_output(capability, f'wrap_output_{step}', ctx, context, handler)
        return await handler(output)

    async def _output_error(
        self, ctx: RunContext[AgentDepsT], step: str, context: OutputContext, output: Any, error: Exception
    ) -> Any:
        for capability in self._reversed[f'on_output_{step}_error']:
            try:
                return await getattr(capability, f'on_output_{step}_error')(
                    ctx, output_context=context, output=output, error=error
                )
            except Exception as raised:  # noqa: BLE001 - the next handler sees what this one raised
                error = raised
        raise error

    async def handle_deferred_tool_calls(
        self, ctx: RunContext[AgentDepsT], requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        """The capabilities' answers to the waiting calls, gathered in order: each is asked about
        the calls the ones before it left open, and asking stops once none is (None: none
        answered anything)."""
        gathered: DeferredToolResults | None = None
        remaining: DeferredToolRequests | None = requests
        for capability in self._hooked['handle_deferred_tool_calls']:
            if remaining is None:
                break
            results = await capability.handle_deferred_tool_calls(ctx, requests=remaining)
            if results is None or not (results.calls or results.approvals):
                continue
            gathered = gathered or DeferredToolResults()
            gathered.update(remaining.answered_by(results))
            remaining = remaining.remaining(results)
        return gathered


def _kept(changed: T | None, current: T) -> T:
    """A hook's return value, or the current value when the hook returned None."""
    return current if changed is None else changed


def _bind_run(capability: AbstractCapability[AgentDepsT], ctx: RunContext[AgentDepsT], inner: RunStep) -> RunStep:
    async def handler() -> AgentRunResult[Any]:
        return await capability.wrap_run(ctx, handler=inner)

    return handler


def _bind_node(capability: AbstractCapability[AgentDepsT], ctx: RunContext[AgentDepsT], inner: NodeStep) -> NodeStep:
    async def handler(node: AgentNode) -> NodeResult:
        return await capability.wrap_node_run(ctx, node=node, handler=inner)

    return handler


def _bind_request(
    capability: AbstractCapability[AgentDepsT], ctx: RunContext[AgentDepsT], inner: RequestStep
) -> RequestStep:
    async def handler(request_context: ModelRequestContext) -> ModelResponse:
        return await capability.wrap_model_request(ctx, request_context=request_context, handler=inner)

    return handler


def _bind_output(
    capability: AbstractCapability[AgentDepsT],
    hook: str,
    ctx: RunContext[AgentDepsT],
    context: OutputContext,
    inner: OutputStep,
) -> OutputStep:
    wrap = getattr(capability, hook)

    async def handler(output: Any) -> Any:
        return await wrap(ctx, output_context=context, output=output, handler=inner)

    return handler


def _bind_tool(
    capability: AbstractCapability[AgentDepsT],
    hook: str,
    ctx: RunContext[AgentDepsT],
    call: ToolCallPart,
    tool_def: ToolDefinition,
    inner: Callable[[A], Awaitable[R]],
) -> Callable[[A], Awaitable[R]]:
    wrap: Callable[..., Awaitable[R]] = getattr(capability, hook)

    async def handler(args: A) -> R:
        return await wrap(ctx, call=call, tool_def=tool_def, args=args, handler=inner)

    return handler
