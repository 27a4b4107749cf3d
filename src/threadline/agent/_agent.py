"""`Agent`: a model, instructions, tools and capabilities, run over a message history."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import warnings
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from types import FrameType, MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, TypeVar, Unpack, overload

from threadline.agent._cancel import cancellable
from threadline.agent._capability import AbstractCapability
from threadline.agent._capture import captured_messages
from threadline.agent._context import AgentDepsT, RunContext
from threadline.agent._dynamic_capability import CapabilityFunc, wrap_capability_funcs
from threadline.agent._entered import EnteredAgent
from threadline.agent._event_handler import EventStreamHandler, drive_with_handler, read_all
from threadline.agent._graph import CallToolsNode, ModelRequestNode, UserPromptNode
from threadline.agent._isolated import isolated
from threadline.agent._metadata import AgentMetadata
from threadline.agent._result import AgentRunResult, OutputDataT
from threadline.agent._run import AgentRun
from threadline.agent._run_events import EventStream
from threadline.agent._run_setup import (
    AgentRetries,
    EndStrategy,
    InstructionsArg,
    RunOptions,
    RunSyncOptions,
    ToolOptions,
    as_list,
    for_run,
    new_state,
    retry_budgets,
)
from threadline.agent._slot import run_slot
from threadline.agent._state import InstructionSource, RunState, SettingsLayer
from threadline.agent._streamed import StreamedRunResult, open_stream
from threadline.agent._streamed_sync import StreamedRunResultSync
from threadline.agent._wrap_run import wrapped_run
from threadline.agent.output._end import End
from threadline.agent.output._output import OutputSpec
from threadline.agent.tools._dynamic import DynamicToolset, ToolsetFunc, as_toolset
from threadline.agent.tools._function import FunctionToolset
from threadline.agent.tools._tool import Tool
from threadline.agent.tools._toolsets import AbstractToolset
from threadline.exceptions import UserError
from threadline.messages import AgentRunResultEvent, AgentStreamEvent, SystemPromptPart, UserContent
from threadline.models import Model, ModelSettings, PreparedHistory, infer_model
from threadline.models.concurrency import AnyConcurrencyLimit, normalize_to_limiter

if TYPE_CHECKING:
    from typing_extensions import TypeIs  # typing.TypeIs from Python 3.13

    from threadline.agent.realtime import AgentRealtime, RealtimeModel

__all__ = ['Agent', 'EndStrategy', 'RunOptions']

F = TypeVar('F', bound=Callable[..., object])
ToolsetFuncT = TypeVar('ToolsetFuncT', bound=ToolsetFunc[Any])
"""A function `@agent.toolset` registers, given back unchanged."""


class _Unset:
    """Marks an `override` argument that was not given (None is a valid model or deps)."""


_UNSET = _Unset()
_NO_OVERRIDES: Mapping[str, Any] = MappingProxyType({})


class Agent(EnteredAgent, Generic[AgentDepsT, OutputDataT]):
    """Runs a model over a message history, with tools, instructions and capabilities.

    Run it with `run` (async), `run_sync`, or `iter` to drive it node by node. Pass the previous
    result's `all_messages()` (or `new_messages()`) as `message_history` to continue a
    conversation; the conversation id is inherited, every run gets a fresh run id.

    `end_strategy` says what happens to function tool calls in the response that calls an output
    tool (as pydantic-ai 2.62 does it, checked against it):
    - `'graceful'` (the default): every function tool runs; output tools are validated in order
      and the first valid one is the result (later ones are not used). A function tool that asks
      for a retry in that response keeps the output from ending the run: the model answers the
      retry first.
    - `'early'`: the first valid output ends the run and the function tools do not run (when every
      output tool fails, they do run, so the model can correct itself).
    - `'exhaustive'`: as `'graceful'`, but every output tool is validated (its side effects run).

    A model name is resolved when the agent is built (an unknown name fails here), unless
    `defer_model_check=True`: then `agent.model` stays the name until a run resolves it.
    """

    def __init__(
        self,
        model: Model | str | None = None,
        *,
        output_type: Any = str,
        instructions: InstructionsArg = None,
        system_prompt: str | Sequence[str] = (),
        tools: Sequence[Tool[AgentDepsT] | Callable[..., Any]] = (),
        deps_type: type[AgentDepsT] | None = None,
        name: str | None = None,
        capabilities: Sequence[AbstractCapability[Any] | CapabilityFunc[Any]] = (),
        toolsets: Sequence[AbstractToolset[AgentDepsT] | ToolsetFunc[AgentDepsT]] = (),
        retries: int | AgentRetries = 1,
        model_settings: SettingsLayer = None,
        end_strategy: EndStrategy = 'graceful',
        defer_model_check: bool = False,
        metadata: AgentMetadata | None = None,
        max_concurrency: AnyConcurrencyLimit = None,
    ) -> None:
        # `defer_model_check=True` keeps a model name as given until a run resolves it (so an
        # agent can be built before its provider's key is set), as pydantic-ai's does.
        self.model: Model | str | None = (
            model if model is None or (defer_model_check and isinstance(model, str)) else infer_model(model)
        )
        self.output_type = output_type
        self.metadata = metadata
        self._concurrency_limiter = normalize_to_limiter(max_concurrency)  # runs at once (see `_slot`)
        self._output = OutputSpec(output_type)
        self._instructions: list[InstructionSource] = as_list(instructions)
        self._system_prompts: list[InstructionSource] = as_list(system_prompt)
        self._dynamic_system_prompts: dict[str, Callable[..., Any]] = {}
        self._tools: dict[str, Tool[AgentDepsT]] = {}
        self.deps_type = deps_type
        self.name = name
        self.capabilities = wrap_capability_funcs(capabilities)
        self._toolsets: list[AbstractToolset[AgentDepsT]] = [as_toolset(t) for t in toolsets]
        # The agent's own tools as a toolset (the same dict), first in `toolsets` as pydantic-ai has it.
        self._function_toolset: FunctionToolset[AgentDepsT] = FunctionToolset()
        self._overrides: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
            f'threadline_agent_overrides_{id(self)}', default=_NO_OVERRIDES
        )
        retry_budgets(retries)  # a bad key is refused here, not at the first run
        self.retries = retries
        # The prepared history of the last run that finished (one conversation's worth, kept so
        # the next run continuing it checks and renders only what is new; see PreparedHistory).
        self._last_prepared: PreparedHistory | None = None
        if end_strategy not in ('early', 'graceful', 'exhaustive'):
            raise UserError(f"end_strategy must be 'early', 'graceful' or 'exhaustive', not {end_strategy!r}")
        self.end_strategy = end_strategy
        self.model_settings = model_settings
        self._output_validators: list[Callable[..., Any]] = []
        for tool in tools:
            self._register(tool if isinstance(tool, Tool) else Tool(tool))
        self._function_toolset.tools = self._tools
        self.capabilities = [c.for_agent(self) for c in self.capabilities]

    @property
    def toolsets(self) -> list[AbstractToolset[AgentDepsT]]:
        """The agent's toolsets: its own tools' first, then those it was given (or, inside
        `override(toolsets=...)`, the overriding ones)."""
        given = self._overrides.get().get('toolsets', self._toolsets)
        return [self._function_toolset, *given]

    def __repr__(self) -> str:
        return f'Agent(model={self.model!r}, name={self.name!r}, tools={list(self._tools)})'

    # -- registration ----------------------------------------------------------------------
    def _register(self, tool: Tool[AgentDepsT]) -> None:
        if tool.name in self._tools:
            raise UserError(f'Tool name conflicts with an existing tool: {tool.name!r}')
        self._tools[tool.name] = tool

    @overload
    def toolset(self, func: ToolsetFuncT, /) -> ToolsetFuncT: ...
    @overload
    def toolset(
        self, /, *, per_run_step: bool = True, id: str | None = None
    ) -> Callable[[ToolsetFuncT], ToolsetFuncT]: ...

    def toolset(
        self, func: ToolsetFuncT | None = None, /, *, per_run_step: bool = True, id: str | None = None
    ) -> ToolsetFuncT | Callable[[ToolsetFuncT], ToolsetFuncT]:
        """Register a function of the `RunContext` that builds a toolset (or None) for each step,
        or once per run with `per_run_step=False` (a `DynamicToolset`)."""

        def register(fn: ToolsetFuncT) -> ToolsetFuncT:
            self._toolsets.append(DynamicToolset(fn, per_run_step=per_run_step, id=id))
            return fn

        return register(func) if func is not None else register

    @overload
    def tool(self, func: F, /) -> F: ...
    @overload
    def tool(self, /, **options: Unpack[ToolOptions]) -> Callable[[F], F]: ...

    def tool(self, func: F | None = None, /, **options: Unpack[ToolOptions]) -> F | Callable[[F], F]:
        """Register a tool whose first parameter is the `RunContext` (options: see `Tool`)."""
        return self._decorate(func, takes_ctx=True, **options)

    @overload
    def tool_plain(self, func: F, /) -> F: ...
    @overload
    def tool_plain(self, /, **options: Unpack[ToolOptions]) -> Callable[[F], F]: ...

    def tool_plain(self, func: F | None = None, /, **options: Unpack[ToolOptions]) -> F | Callable[[F], F]:
        """Register a tool that does not take the `RunContext` (options: see `Tool`)."""
        return self._decorate(func, takes_ctx=False, **options)

    def _decorate(self, func: F | None, **options: Any) -> F | Callable[[F], F]:
        """`func` registered as a tool with `options` (or, without `func`, the decorator that does it)."""
        if 'retries' in options:
            options['max_retries'] = options.pop('retries')

        def register(fn: F) -> F:
            self._register(Tool(fn, **options))
            return fn

        return register(func) if func is not None else register

    def realtime(self, model: RealtimeModel) -> AgentRealtime:
        """This agent on a realtime model: `async with agent.realtime(model).session() as s:`
        (see `threadline.realtime`)."""
        from threadline.agent.realtime import AgentRealtime  # realtime sessions load when first used

        return AgentRealtime(self, model)

    @overload
    def instructions(self, func: F, /) -> F: ...
    @overload
    def instructions(self, /) -> Callable[[F], F]: ...

    def instructions(self, func: F | None = None, /) -> F | Callable[[F], F]:
        """Register a function (optionally taking the `RunContext`) whose text joins the
        instructions; `@agent.instructions` and `@agent.instructions()` both work."""

        def register(fn: F) -> F:
            self._instructions.append(fn)
            return fn

        return register(func) if func is not None else register

    @overload
    def system_prompt(self, func: F, /) -> F: ...
    @overload
    def system_prompt(self, /, *, dynamic: bool = False) -> Callable[[F], F]: ...

    def system_prompt(self, func: F | None = None, /, *, dynamic: bool = False) -> F | Callable[[F], F]:
        """Register a function producing a system prompt part (only used when a history starts)."""

        def register(fn: F) -> F:
            if dynamic:
                self._dynamic_system_prompts[fn.__qualname__] = fn  # the part's `dynamic_ref`, as pydantic-ai's
            else:
                self._system_prompts.append(fn)
            return fn

        return register(func) if func is not None else register

    def output_validator(self, func: F, /) -> F:
        """Register `fn(output)` or `fn(ctx, output)`; raising `ModelRetry` asks the model to retry."""
        self._output_validators.append(func)
        return func

    @contextmanager
    def override(
        self,
        *,
        model: Model | str | _Unset = _UNSET,
        deps: Any = _UNSET,
        tools: Sequence[Tool[AgentDepsT] | Callable[..., Any]] | _Unset = _UNSET,
        toolsets: Sequence[AbstractToolset[AgentDepsT]] | _Unset = _UNSET,
        instructions: InstructionsArg | _Unset = _UNSET,
        model_settings: ModelSettings | _Unset | None = _UNSET,
        retries: int | AgentRetries | _Unset = _UNSET,
    ) -> Iterator[None]:
        """Inside the block, runs of this agent use what is given here instead of what the agent
        or the call names (for tests: swap a real provider for `TestModel`). `tools` replaces the
        agent's own tools (capabilities keep theirs), `toolsets` the agent's toolsets; `instructions` the agent's instructions (a
        run's `instructions=` still adds to them). Blocks nest; the innermost wins. Context-local:
        other tasks and threads see the agent as it is."""
        given = {
            'model': model,
            'deps': deps,
            'tools': tools,
            'toolsets': toolsets,
            'instructions': instructions,
            'model_settings': model_settings,
            'retries': retries,
        }
        changes = {name: value for name, value in given.items() if not isinstance(value, _Unset)}
        if 'tools' in changes:
            changes['tools'] = {t.name: t for t in (t if isinstance(t, Tool) else Tool(t) for t in changes['tools'])}
        token = self._overrides.set({**self._overrides.get(), **changes})
        try:
            yield
        finally:
            self._overrides.reset(token)

    @staticmethod
    def is_user_prompt_node(node: object) -> TypeIs[UserPromptNode]:
        """Whether a node from `iter()` is the first one (the user prompt)."""
        return isinstance(node, UserPromptNode)

    @staticmethod
    def is_model_request_node(node: object) -> TypeIs[ModelRequestNode]:
        """Whether a node from `iter()` sends a request to the model."""
        return isinstance(node, ModelRequestNode)

    @staticmethod
    def is_call_tools_node(node: object) -> TypeIs[CallToolsNode]:
        """Whether a node from `iter()` handles a response (runs its tool calls)."""
        return isinstance(node, CallToolsNode)

    @staticmethod
    def is_end_node(node: object) -> TypeIs[End[Any]]:
        """Whether a node from `iter()` is the end of the run."""
        return isinstance(node, End)

    @property
    def tools(self) -> dict[str, Tool[AgentDepsT]]:
        return dict(self._tools)

    async def system_prompt_parts(self, ctx: RunContext[Any]) -> list[SystemPromptPart]:
        """The agent's configured system prompt parts, rendered for `ctx`."""
        state = RunState.for_prompts(self, ctx)
        return await state.system_prompt_parts()

    # -- running ---------------------------------------------------------------------------
    @asynccontextmanager
    async def iter(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        **options: Unpack[RunOptions[AgentDepsT]],
    ) -> AsyncIterator[AgentRun[OutputDataT]]:
        """Start a run and hand it over to be driven node by node (see `AgentRun`; the options
        are `run`'s)."""
        frame = inspect.currentframe()
        self._name_from(frame.f_back if frame is not None else None)
        state = await for_run(self, new_state(self, user_prompt, **options))
        async with self._running(state, user_prompt) as agent_run:
            yield agent_run

    def _name_from(self, frame: FrameType | None) -> None:
        """Without a `name`, the agent takes the name of the variable holding it in the code that
        called `frame`'s function (its locals, then its module's globals), as pydantic-ai does."""
        if self.name is not None or frame is None or frame.f_back is None:
            return
        caller = frame.f_back
        scopes = [caller.f_locals] if caller.f_locals is caller.f_globals else [caller.f_locals, caller.f_globals]
        for scope in scopes:
            for name, value in scope.items():
                if value is self:
                    self.name = name
                    return

    @asynccontextmanager
    async def _running(
        self, state: RunState, user_prompt: str | Sequence[UserContent] | None, *, wrapped: bool = False
    ) -> AsyncIterator[AgentRun[OutputDataT]]:
        """The run's lifecycle around its nodes: toolsets entered, `before_run`, then the caller
        drives the nodes; `capture_run_messages` sees the history however the block ends. Unless
        `wrapped` (`run()` calls the hooks itself), `wrap_run` hooks enclose it all."""
        captured = captured_messages()
        try:
            async with (
                cancellable(state),
                run_slot(self._concurrency_limiter, self.name),
                contextlib.AsyncExitStack() as stack,
            ):
                await state.toolsets_for_run()
                for toolset in (state.toolset, state.step_toolset):
                    if toolset is not None:
                        await stack.enter_async_context(toolset)
                if wrapped:
                    await state.capabilities.before_run(state.ctx)
                    yield AgentRun(state, UserPromptNode(user_prompt))
                else:
                    first = UserPromptNode(user_prompt)
                    start: Callable[[], AgentRun[Any]] = lambda: AgentRun(state, first)  # noqa: E731
                    ended = partial(AgentRun[Any].ended, state)
                    yield await stack.enter_async_context(wrapped_run(state, start, ended))
        finally:
            if captured is not None:
                captured[:] = state.history

    async def run(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        *,
        event_stream_handler: EventStreamHandler | None = None,
        **options: Unpack[RunOptions[AgentDepsT]],
    ) -> AgentRunResult[OutputDataT]:
        """Run the agent to the end and return its result. `event_stream_handler` is awaited with
        each step's events as they happen (see `threadline.agent._event_handler` for the rules).
        Capabilities' `wrap_run` hooks enclose the whole run.

        Options (`RunOptions`): `message_history`, `deferred_tool_results`, `model`, `deps`,
        `model_settings`, `usage_limits`, `usage`, `instructions`, `run_id`, `conversation_id`,
        `capabilities`, `toolsets`, `retries`, `metadata`, `output_type`, `timeout` (seconds for the
        whole run: past it, `RunTimedOut`; `AgentRun.cancel()` and `RunContext.cancel()` stop a run
        with `RunCancelled`, see `_cancel`)."""
        self._name_from(inspect.currentframe())
        state = await for_run(self, new_state(self, user_prompt, **options))

        async def lifecycle() -> AgentRunResult[Any]:
            async with self._running(state, user_prompt, wrapped=True) as agent_run:
                handler = event_stream_handler
                if handler is None and state.capabilities.hears_events():
                    handler = read_all  # as in pydantic-ai: their hooks hear a run streamed
                if handler is not None:
                    await drive_with_handler(agent_run, handler)
                else:
                    async for _ in agent_run:
                        pass
            assert agent_run.result is not None
            return agent_run.result

        # A context of its own, so the context variables the run's hooks set do not outlive it here.
        if state.capabilities.has('wrap_run'):
            return await isolated(state.capabilities.wrap_run(state.ctx, lifecycle))
        return await isolated(lifecycle())

    @asynccontextmanager
    async def run_stream(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        **kwargs: Unpack[RunOptions[AgentDepsT]],
    ) -> AsyncIterator[StreamedRunResult[OutputDataT]]:
        """Run until the model streams its final response, and hand that stream over (see
        `StreamedRunResult`; same arguments as `run`). Tool steps before it run to completion first."""
        self._name_from(inspect.currentframe())
        async with self.iter(user_prompt, **kwargs) as agent_run:
            streamed = await open_stream(agent_run)
            try:
                yield streamed
            except BaseException as error:
                await streamed._close(interrupted=True, error=error)
                raise
            await streamed._close(interrupted=False)

    def run_stream_sync(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        **kwargs: Unpack[RunOptions[AgentDepsT]],
    ) -> StreamedRunResultSync[OutputDataT]:
        """`run_stream` for code without an event loop: use the result as a `with` block and read
        it with the same methods, synchronously (see `threadline.agent._streamed_sync`).

            with agent.run_stream_sync('Tell me a story') as result:
                for text in result.stream_text(delta=True):
                    print(text, end='')
        """
        self._name_from(inspect.currentframe())
        return StreamedRunResultSync(self.run_stream(user_prompt, **kwargs), _thread_loop())

    def run_stream_events(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        **kwargs: Unpack[RunOptions[AgentDepsT]],
    ) -> EventStream[AgentStreamEvent | AgentRunResultEvent]:
        """Run the agent and yield every event as it happens: part start / delta / end of each
        response, tool calls and their results, the final result, delivered enqueued messages, and
        last an `AgentRunResultEvent` with the result (same arguments as `run`). The run is
        `run(event_stream_handler=...)` in a background task started by the first read (see
        `threadline.agent._run_events`). Iterate it directly, or enter it with `async with` (as
        pydantic-ai's is) so leaving the block stops the run."""
        self._name_from(inspect.currentframe())
        return EventStream(partial(self.run, user_prompt, **kwargs))

    def run_sync(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        **kwargs: Unpack[RunSyncOptions[AgentDepsT]],
    ) -> AgentRunResult[OutputDataT]:
        """`run` for synchronous code; not callable from inside a running event loop. It runs on the
        thread's event loop (made if there is none) and leaves it in place, as pydantic-ai does, so
        code after it can still use `asyncio.get_event_loop()`."""
        self._name_from(inspect.currentframe())
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return _thread_loop().run_until_complete(self.run(user_prompt, **kwargs))
        raise UserError('run_sync() cannot be called from a running event loop; use `await agent.run(...)`.')


def _thread_loop() -> asyncio.AbstractEventLoop:
    """This thread's event loop, set up if there is none (or it was closed)."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)  # get_event_loop() warns when none is set
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            loop = None
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
    return loop
