"""Threadline's capabilities on a pydantic-ai `Agent`: `ConversationSearch`, `Memory`, `ReplayGate`.

Each is Threadline's own capability (the same tools, descriptions, argument schemas and rules),
driven through a pydantic-ai capability that translates: its tools become pydantic-ai tools with
the same JSON schema, whose calls are validated and run by Threadline's tool over a view of the run
(`_view.RunView`), and its run hooks are called with that view.

Rules (each tested in `tests/pydantic_ai/test_search_and_memory.py`):
- `scope` (and `namespace`) are strings or functions of pydantic-ai's `RunContext`, resolved from
  the run, never from a tool argument.
- A tool's `ModelRetry` (Threadline's) is pydantic-ai's `ModelRetry` with the same message, so the
  model is asked again the way pydantic-ai asks it; arguments that do not fit the schema are a
  retry too, naming the field.
- The run hooks the Threadline capability needs are called with the view (`before_run`, and what
  it does before a model request and when a run is left); the view is dropped when the run ends,
  however it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import ValidationError
from pydantic_ai import AgentRunResult, ModelRequestContext
from pydantic_ai import ModelRetry as TheirRetry
from pydantic_ai import RunContext as TheirContext
from pydantic_ai import Tool as TheirTool
from pydantic_ai.capabilities import AbstractCapability, ValidatedToolArgs, WrapRunHandler
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import AgentDepsT, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset as TheirToolset

from threadline._public import publish
from threadline.agent import RunContext, Tool
from threadline.agent.capability import AbstractCapability as OurCapability
from threadline.audit import AuditContext, AuditReport
from threadline.audit import ReplayGate as OurReplayGate
from threadline.exceptions import ModelRetry, UserError
from threadline.memory import Memory as OurMemory
from threadline.pydantic_ai._view import THEIR_CONTEXT, RunView, RunViews, run_ids
from threadline.search import ConversationSearch as OurSearch
from threadline.storage import AsyncStore, SyncStore

__all__ = ['ConversationSearch', 'Memory', 'ReplayGate']

Resolved = str | Callable[[TheirContext[Any]], str]


class _Adapted(AbstractCapability[AgentDepsT]):
    """A Threadline capability `inner`, on a pydantic-ai agent (rules in the module docstring)."""

    def __init__(self, inner: OurCapability[object]) -> None:
        self._inner = inner
        self._views = RunViews()
        self._hooks = inner.overridden_hooks()
        ours = inner.get_toolset()
        tools: list[TheirTool[AgentDepsT]] = []
        for tool in getattr(ours, 'tools', {}).values():
            tools.append(self._their_tool(tool))
        self._toolset: TheirToolset[AgentDepsT] = TheirToolset(tools, id=getattr(ours, 'id', None))

    def get_toolset(self) -> TheirToolset[AgentDepsT]:
        return self._toolset

    def _their_tool(self, tool: Tool[object]) -> TheirTool[AgentDepsT]:
        definition = tool.tool_def

        async def call(ctx: TheirContext[AgentDepsT], **arguments: object) -> object:
            view = self._view(ctx)
            try:
                args = tool.validate_args(dict(arguments))
            except ValidationError as exc:
                raise TheirRetry(f'the arguments do not fit the tool: {exc.errors(include_input=False)}') from None
            try:
                return await tool.call(view, args)
            except ModelRetry as exc:
                raise TheirRetry(str(exc)) from None

        return TheirTool.from_schema(
            call,
            name=definition.name,
            description=definition.description,
            json_schema=definition.parameters_json_schema,
            takes_ctx=True,
        )

    def _view(self, ctx: TheirContext[AgentDepsT]) -> RunContext[object]:
        return self._views.sync(ctx)

    async def before_run(self, ctx: TheirContext[AgentDepsT]) -> None:
        view = self._view(ctx)
        if 'before_run' in self._hooks:
            await self._inner.before_run(view)

    async def wrap_run(self, ctx: TheirContext[AgentDepsT], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        view = self._view(ctx)
        try:
            return await handler()
        finally:  # however the run ends, its state here and in the Threadline capability goes
            self._views.drop(ctx)
            self._run_left(view)

    async def before_model_request(
        self, ctx: TheirContext[AgentDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        await self._before_request(self._view(ctx))
        return request_context

    async def _before_request(self, view: RunContext[object]) -> None:
        """What the Threadline capability does before a model request (nothing, by default)."""
        return None

    def _run_left(self, view: RunContext[object]) -> None:
        """What the Threadline capability does when a run is left (nothing, by default)."""
        return None


def _resolver(value: Resolved, name: str) -> Callable[[RunContext[object]], str] | str:
    """`value` as the Threadline capability resolves it: a function of the view, calling the
    user's function with pydantic-ai's context."""
    if not callable(value):
        return value

    def resolve(view: RunContext[object]) -> str:
        resolved = value(view.metadata[THEIR_CONTEXT])
        if not isinstance(resolved, str):
            raise UserError(f'{name} must resolve to a string, not {type(resolved).__name__}')
        return resolved

    return resolve


class ConversationSearch(_Adapted[AgentDepsT]):
    """Threadline's `ConversationSearch` tool on a pydantic-ai agent: the run's conversation (or
    its whole scope) searched in a Threadline store, with the same rules."""

    def __init__(
        self,
        store: AsyncStore[SyncStore],
        *,
        scope: Resolved,
        reach: Literal['conversation', 'scope'] = 'conversation',
        tool_name: str = 'search_conversation',
        max_hits: int = 10,
        max_chars: int = 4_000,
    ) -> None:
        inner: OurSearch[object] = OurSearch(
            store,
            scope=_resolver(scope, 'scope'),
            reach=reach,
            tool_name=tool_name,
            max_hits=max_hits,
            max_chars=max_chars,
        )
        super().__init__(inner)


class Memory(_Adapted[AgentDepsT]):
    """Threadline's `Memory` notebook on a pydantic-ai agent: the same tools, compare-and-set
    writes, receipts and the framed excerpt injected before the run's first model request."""

    def __init__(
        self,
        store: AsyncStore[SyncStore],
        *,
        scope: Resolved,
        namespace: Resolved,
        max_excerpt: int = 2_000,
        max_chars: int = 65_536,
        inject: bool = True,
    ) -> None:
        self._memory: OurMemory[object] = OurMemory(
            store,
            scope=_resolver(scope, 'scope'),
            namespace=_resolver(namespace, 'namespace'),
            max_excerpt=max_excerpt,
            max_chars=max_chars,
            inject=inject,
        )
        super().__init__(self._memory)

    async def _before_request(self, view: RunContext[object]) -> None:
        await self._memory.inject_excerpt(view)

    def _run_left(self, view: RunContext[object]) -> None:
        self._memory.forget_run(view)


class ReplayGate(AbstractCapability[AgentDepsT]):
    """Threadline's replay audit before a pydantic-ai run acts on its history: the history the run
    was given is audited (the six gates of `threadline.audit`) and the run refused with
    `ReplayRefused` unless the verdict is in `allow`. pydantic-ai's run-level hooks see no history,
    so the audit runs at the run's first model request or tool call, before either happens;
    `context` is an `AuditContext` or a function of pydantic-ai's `RunContext` building one."""

    def __init__(
        self,
        context: AuditContext | Callable[[TheirContext[AgentDepsT]], AuditContext],
        *,
        allow: Sequence[str] = ('READY', 'WAITING'),
        quarantine: bool = False,
    ) -> None:
        self._context = context
        self._gate: OurReplayGate[object] = OurReplayGate(self._their_context, allow=allow, quarantine=quarantine)
        self._checked: set[str] = set()

    @property
    def last_report(self) -> AuditReport | None:
        return self._gate.last_report

    def _their_context(self, view: RunContext[object]) -> AuditContext:
        ctx = view.metadata[THEIR_CONTEXT]
        return self._context(ctx) if callable(self._context) else self._context

    async def _check(self, ctx: TheirContext[AgentDepsT]) -> None:
        run_id = run_ids(ctx)[0]
        if run_id in self._checked:
            return
        self._checked.add(run_id)
        given = [m for m in ctx.messages if m.run_id != run_id]  # what the run was handed
        view = RunView.of(ctx).sync(ctx, given)
        await self._gate.before_run(view)

    async def wrap_run(self, ctx: TheirContext[AgentDepsT], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        try:
            return await handler()
        finally:
            self._checked.discard(run_ids(ctx)[0])

    async def before_model_request(
        self, ctx: TheirContext[AgentDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        await self._check(ctx)
        return request_context

    async def before_tool_execute(
        self, ctx: TheirContext[AgentDepsT], *, call: ToolCallPart, tool_def: ToolDefinition, args: ValidatedToolArgs
    ) -> ValidatedToolArgs:
        await self._check(ctx)
        return args


publish('threadline.pydantic_ai', globals(), __all__)  # loaded on first use, through the package
