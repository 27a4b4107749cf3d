"""The capability interface: every hook a capability may override, each a no-op by default.

Storage, the replay gate, memory and history processing are all capabilities. A capability
subclasses `AbstractCapability` (re-exported from `threadline.capabilities`) and overrides the
hooks it needs. The interface lives in the agent package because the agent calls it:
`threadline.capabilities` builds on the agent, never the other way round. The rules for calling
the hooks (order, wrapping, error recovery) are `CapabilityChain`'s, in `_chain.py`.

Each lifecycle (the run, a node, a model request, a tool's validation, a tool's execution) has
the same four hooks: `before_*` may change the input, `after_*` the output, `on_*_error` may
recover from a failure by returning a value, and `wrap_*` encloses the other three with a
`handler` that runs them (call it zero times to skip the lifecycle, more than once to retry).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

from threadline.agent._context import AgentDepsT
from threadline.agent._on_event import listeners
from threadline.agent._ordering import CapabilityOrdering
from threadline.messages import AgentStreamEvent, ModelMessage, ModelResponse, ToolCallPart
from threadline.models import Model, ModelRequestParameters, ModelSettings, ToolDefinition

if TYPE_CHECKING:
    from threadline.agent._agent import Agent
    from threadline.agent._context import RunContext
    from threadline.agent._graph import AgentNode, NodeResult
    from threadline.agent._model_choice import ModelResolutionContext, ModelSelector
    from threadline.agent._result import AgentRunResult
    from threadline.agent.output._deferred_types import DeferredToolRequests, DeferredToolResults
    from threadline.agent.output._output import OutputContext
    from threadline.agent.tools._toolsets import AbstractToolset

__all__ = [
    'HOOKS',
    'PROVIDERS',
    'AbstractCapability',
    'CapabilityDepsT',
    'CapabilityInstructions',
    'ModelRequestContext',
    'overridden_hooks',
]

CapabilityInstructions = str | Callable[..., Any] | Sequence[str | Callable[..., Any]]
"""What `get_instructions()` returns: a string, an instruction function, or a list of them."""

CapabilityDepsT = TypeVar('CapabilityDepsT', default=Any)
"""The deps type of a capability that works with any agent's deps (`StepPersistence`, `Memory`, ...).
Unsolved it is `Any`, so `StepPersistence(store, scope=...)` needs no annotation and fits an agent of
any deps type; `StepPersistence[MyDeps](...)` types what its callables (a scope resolver) see."""


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
    streams_in_model_request: bool = False
    """In a run with an `event_stream_handler`, stream each response inside the model request,
    so this capability's `wrap_model_request` encloses the stream (a durable step does), rather
    than streaming around the request hooks."""
    defer_loading: bool = False
    """Keep its tools, instructions and hooks out of the run until the model loads it with the
    `load_capability` tool (see `threadline.agent.tools._load`)."""

    def get_toolset(self) -> AbstractToolset[AgentDepsT] | None:
        """Tools this capability gives every run it is part of (None: no tools). A
        `FunctionToolset`'s tools join the agent's; any other toolset (a `CombinedToolset`'s
        members too) is asked for its tools at each step, as the agent's `toolsets=` are."""
        return None

    def get_instructions(self) -> CapabilityInstructions | None:
        """Instructions this capability adds to every request while it is active (None: none): a
        string, a function of the `RunContext` (or of nothing, sync or async) rendered before
        each request, or a list of them."""
        return None

    def get_ordering(self) -> CapabilityOrdering | None:
        """Where this capability must sit in the chain (see `threadline.agent._ordering`); None:
        where it was listed."""
        return None

    def get_model_settings(self) -> ModelSettings | Callable[[RunContext[AgentDepsT]], ModelSettings] | None:
        """Model settings merged over the agent's (and under the run's) for every request: a
        dict, or a function of the `RunContext` asked before each request (None: none)."""
        return None

    def get_model(self) -> Model | str | ModelSelector[AgentDepsT] | None:
        """The model this capability chooses (None: no choice): a model, a model name, or a
        function of a `ModelSelectionContext` (sync or async) asked before each model request.
        The last capability to choose wins over the agent's `model=` (see `_model_choice`)."""
        return None

    async def resolve_model_id(self, ctx: ModelResolutionContext[AgentDepsT], *, model_id: str) -> Model | None:
        """Turn a model name into a model (None: leave it to the next capability, then to
        `infer_model`); the first capability to answer wins."""
        return None

    def get_wrapper_toolset(self, toolset: AbstractToolset[AgentDepsT]) -> AbstractToolset[AgentDepsT] | None:
        """A toolset around the run's function tools and toolsets (output tools excluded), asked
        once per run after `for_run` (None: leave it); the first capability's wrapper is outermost."""
        return None

    def get_wrapper_model(self, model: Model) -> Model | None:
        """A model around the one about to serve a model request (None: leave it), asked for each
        request after the `before_model_request` hooks; the first capability's wrapper is outermost."""
        return None

    async def prepare_tools(self, ctx: RunContext[AgentDepsT], tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        """The function tools offered at this step: drop or change definitions (a dropped tool
        cannot be called either); adding or renaming one is a `UserError`."""
        return tool_defs

    async def prepare_output_tools(
        self, ctx: RunContext[AgentDepsT], tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        """As `prepare_tools`, for the output tools; `ctx.max_retries` is the output retry budget."""
        return tool_defs

    async def on_event(self, ctx: RunContext[AgentDepsT], *, event: AgentStreamEvent) -> None:
        """Called with each event of the run's event stream (model stream events, tool call and
        result events); a run with a capability that has it streams even without a handler.
        The default calls the methods marked with `@on_event` that hear `event`."""
        for listener in listeners(type(self)):
            if listener.hears(event):
                await listener.func(self, ctx, event)

    def wrap_run_event_stream(
        self, ctx: RunContext[AgentDepsT], *, stream: AsyncIterable[AgentStreamEvent]
    ) -> AsyncIterable[AgentStreamEvent]:
        """The event stream a consumer reads (an event handler, `node.stream()`), per node: yield
        changed, fewer or more events. It changes only what is read, never the history."""
        return stream

    async def before_run(self, ctx: RunContext[AgentDepsT]) -> None:
        """Called once before the first node; raise to refuse the run."""

    async def after_run(self, ctx: RunContext[AgentDepsT], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        """Called once after the run produced its result; may return a different result."""
        return result

    async def on_run_error(self, ctx: RunContext[AgentDepsT], *, error: BaseException) -> AgentRunResult[Any]:
        """Called when the run failed; re-raise (the default) or return a result to recover."""
        raise error

    async def after_node_run(self, ctx: RunContext[AgentDepsT], *, node: AgentNode, result: NodeResult) -> NodeResult:
        """Called after each node ran with the node that comes next (or `End`)."""
        return result

    async def before_model_request(
        self, ctx: RunContext[AgentDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Called before each model request; may change what is sent."""
        return request_context

    async def after_model_request(
        self, ctx: RunContext[AgentDepsT], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        """Called with each response before the run acts on it."""
        return response

    async def on_model_request_error(
        self, ctx: RunContext[AgentDepsT], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        """Called when a model request failed; re-raise or return a response to use instead."""
        raise error

    async def before_tool_execute(
        self, ctx: RunContext[AgentDepsT], *, call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any]
    ) -> dict[str, Any]:
        """Called before a tool body runs, with its validated arguments; may change them or raise."""
        return args

    async def after_tool_execute(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        result: Any,
    ) -> Any:
        """Called with a tool's result; may return a different one."""
        return result

    async def on_tool_execute_error(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        error: Exception,
    ) -> Any:
        """Called when a tool body raised (including `ModelRetry`); re-raise or return a result."""
        raise error

    async def wrap_tool_execute(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        """Encloses a tool's execution: `handler(args)` runs the `before_tool_execute` hooks, the
        tool (with `on_tool_execute_error` recovery) and the `after_tool_execute` hooks."""
        return await handler(args)

    async def wrap_tool_body(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        """Encloses the tool's own body only: `handler(args)` calls the tool, after the
        `before_tool_execute` hooks and before the `after_tool_execute` ones. Threadline's own
        hook (pydantic-ai draws the same line by wrapping the toolset): where a durability engine
        draws its step, so what other capabilities record about the call stays outside it."""
        return await handler(args)

    async def before_tool_validate(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: str | dict[str, Any] | None,
    ) -> str | dict[str, Any] | None:
        """Called with the model's raw arguments (JSON text or a dict) before they are validated."""
        return args

    async def after_tool_validate(
        self, ctx: RunContext[AgentDepsT], *, call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any]
    ) -> dict[str, Any]:
        """Called with the validated arguments (or those an error hook recovered with)."""
        return args

    async def on_tool_validate_error(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: str | dict[str, Any] | None,
        error: Exception,
    ) -> dict[str, Any]:
        """Called when the arguments did not validate (`ToolArgsError`, whose `errors` go back to
        the model, or a `ModelRetry`); re-raise, or return arguments to use instead."""
        raise error

    async def wrap_tool_validate(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: str | dict[str, Any] | None,
        handler: Callable[[str | dict[str, Any] | None], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """Encloses argument validation: `handler(args)` runs `before_tool_validate`, validation
        (with `on_tool_validate_error` recovery) and `after_tool_validate`."""
        return await handler(args)

    async def wrap_model_request(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        request_context: ModelRequestContext,
        handler: Callable[[ModelRequestContext], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """Encloses a model request: `handler(request_context)` runs `before_model_request`, the
        request (with `on_model_request_error` recovery) and `after_model_request`. A streamed
        request is not wrapped (its response is consumed by the caller, outside any handler)."""
        return await handler(request_context)

    async def before_node_run(self, ctx: RunContext[AgentDepsT], *, node: AgentNode) -> AgentNode:
        """Called before each node runs; may return a different node to run."""
        return node

    async def on_node_run_error(self, ctx: RunContext[AgentDepsT], *, node: AgentNode, error: Exception) -> NodeResult:
        """Called when a node failed; re-raise (the default) or return the node to go on with."""
        raise error

    async def wrap_node_run(
        self, ctx: RunContext[AgentDepsT], *, node: AgentNode, handler: Callable[[AgentNode], Awaitable[NodeResult]]
    ) -> NodeResult:
        """Encloses one node: `handler(node)` runs `before_node_run`, the node (with
        `on_node_run_error` recovery) and `after_node_run`, and returns the next node."""
        return await handler(node)

    async def wrap_run(
        self, ctx: RunContext[AgentDepsT], *, handler: Callable[[], Awaitable[AgentRunResult[Any]]]
    ) -> AgentRunResult[Any]:
        """Encloses a whole run driven by `run()` / `run_sync()`: `handler()` runs `before_run`,
        the run (with `on_run_error` recovery) and `after_run`. Runs driven node by node
        (`iter()`, streaming) are not wrapped: their caller holds the loop."""
        return await handler()

    async def before_output_validate(
        self, ctx: RunContext[AgentDepsT], *, output_context: OutputContext, output: Any
    ) -> Any:
        """Called with the raw output (a tool call's arguments, or the text) before it is validated."""
        return output

    async def after_output_validate(
        self, ctx: RunContext[AgentDepsT], *, output_context: OutputContext, output: Any
    ) -> Any:
        """Called with the validated output (or what an error hook recovered with)."""
        return output

    async def on_output_validate_error(
        self, ctx: RunContext[AgentDepsT], *, output_context: OutputContext, output: Any, error: Exception
    ) -> Any:
        """Called when the output did not validate; re-raise, or return a validated output."""
        raise error

    async def wrap_output_validate(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        output_context: OutputContext,
        output: Any,
        handler: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        """Encloses output validation: `handler(output)` runs the other validate hooks and validation."""
        return await handler(output)

    async def before_output_process(
        self, ctx: RunContext[AgentDepsT], *, output_context: OutputContext, output: Any
    ) -> Any:
        """Called with the validated output before it is processed (an output function called)."""
        return output

    async def after_output_process(
        self, ctx: RunContext[AgentDepsT], *, output_context: OutputContext, output: Any
    ) -> Any:
        """Called with the processed output: what it returns is the run's output."""
        return output

    async def on_output_process_error(
        self, ctx: RunContext[AgentDepsT], *, output_context: OutputContext, output: Any, error: Exception
    ) -> Any:
        """Called when processing failed (an output function raised); re-raise or return an output."""
        raise error

    async def wrap_output_process(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        output_context: OutputContext,
        output: Any,
        handler: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        """Encloses output processing: `handler(output)` runs the other process hooks and the processing."""
        return await handler(output)

    async def handle_deferred_tool_calls(
        self, ctx: RunContext[AgentDepsT], *, requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        """Answer calls waiting on approval or an outside result (`DeferredToolRequests`) with
        `DeferredToolResults` so the run goes on; None (the default) leaves them to the caller."""
        return None

    def for_agent(self, agent: Agent[Any, Any]) -> AbstractCapability[AgentDepsT]:
        """The capability to attach when an agent is built with this one (default: itself)."""
        return self

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractCapability[AgentDepsT]:
        """The capability to use for one run (default: itself): return a fresh instance to keep
        per-run state off a capability that agents share."""
        return self

    def overridden_hooks(self) -> frozenset[str]:
        """The names of the hooks this capability implements (the chain calls only those)."""
        return overridden_hooks(type(self))


HOOKS = (
    'prepare_tools', 'prepare_output_tools', 'on_event', 'resolve_model_id',
    'before_run', 'after_run', 'on_run_error', 'wrap_run',
    'before_node_run', 'after_node_run', 'on_node_run_error', 'wrap_node_run',
    'before_model_request', 'after_model_request', 'on_model_request_error', 'wrap_model_request',
    'before_tool_validate', 'after_tool_validate', 'on_tool_validate_error', 'wrap_tool_validate',
    'before_tool_execute', 'after_tool_execute', 'on_tool_execute_error', 'wrap_tool_execute', 'wrap_tool_body',
    'before_output_validate', 'after_output_validate', 'on_output_validate_error', 'wrap_output_validate',
    'before_output_process', 'after_output_process', 'on_output_process_error', 'wrap_output_process',
    'handle_deferred_tool_calls',
)  # fmt: skip
"""Every hook awaited, by lifecycle."""

PROVIDERS = ('get_model', 'get_model_settings', 'get_wrapper_toolset', 'get_wrapper_model', 'wrap_run_event_stream')
"""The hooks called without awaiting: each gives an object (a model, a toolset, a stream)."""


_OVERRIDDEN: dict[type, frozenset[str]] = {}


def overridden_hooks(cls: type[AbstractCapability[Any]]) -> frozenset[str]:
    """The hooks `cls` overrides (a default hook does nothing, so the chain skips it)."""
    found = _OVERRIDDEN.get(cls)
    if found is None:
        found = _OVERRIDDEN[cls] = frozenset(
            name for name in (*HOOKS, *PROVIDERS) if getattr(cls, name) is not getattr(AbstractCapability, name)
        ) | ({'on_event'} if listeners(cls) else set())
    return found
