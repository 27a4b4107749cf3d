"""`StepPersistence` for a pydantic-ai `Agent`: Threadline's step writes, driven by its hooks.

    agent = Agent('openai:gpt-5.2', capabilities=[StepPersistence(store, scope='tenant-1')])

The writes are Threadline's own (`threadline.steps.StepPersistence`): the same transactions,
syncs, ledger rows and snapshots (positions in the conversation log), so a pydantic-ai run has
the guarantees a Threadline run has. This module only translates: each pydantic-ai hook calls the
matching step operation over a *view* of the run, a Threadline `RunContext` whose `messages` are
the run's history as Threadline messages.

Rules (each tested in `tests/pydantic_ai/test_step_persistence.py`):
- The view is kept per run and converted incrementally, by identity: while the run's list only
  grows, a hook converts only the messages added since the last hook, so its cost does not grow
  with the history; a list a processor replaced is walked again, converting only objects not
  seen before. A converted message is the same object at every later hook (the step log tells a
  rewritten history from a grown one by identity).
- The run's own usage is what pydantic-ai's `ctx.usage` gained during the run (a run given
  `usage=` starts from that total).
- `scope` is a string or a function of pydantic-ai's `RunContext` (the server's decision, never
  the model's), resolved once per run.
- A run over a conversation whose ledger holds a call that started and never finished is refused
  with `UnresolvedToolEffect` until `reconcile_tool_call` records what happened, as for
  Threadline's own `Agent`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import AgentRunResult, CallToolsNode, ModelRequestContext, ModelRequestNode, ModelRetry
from pydantic_ai import RunContext as TheirContext
from pydantic_ai.capabilities import AbstractCapability, AgentNode, NodeResult, ValidatedToolArgs, WrapRunHandler
from pydantic_ai.messages import ModelMessage as TheirMessage
from pydantic_ai.messages import ModelResponse as TheirResponse
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import AgentDepsT, ToolDefinition
from pydantic_ai.usage import RunUsage as TheirUsage

from threadline.agent import RunContext
from threadline.exceptions import UserError
from threadline.messages import ModelMessage, ModelResponse, RunUsage
from threadline.models.function import AgentInfo, FunctionModel
from threadline.pydantic_ai._bridge import from_pydantic_ai, usage_from_pydantic_ai
from threadline.steps import StepPersistence as ThreadlineStepPersistence
from threadline.storage import AsyncStore, SyncStore

__all__ = ['StepPersistence']

_THEIR_CONTEXT = 'pydantic_ai_context'


def _not_a_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise UserError("the view of a pydantic-ai run has no Threadline model: its requests are pydantic-ai's")


_NO_MODEL = FunctionModel(_not_a_model)


@dataclass
class _View:
    """One pydantic-ai run as Threadline's step log sees it."""

    context: RunContext[object]
    start_usage: TheirUsage
    seen: dict[int, tuple[TheirMessage, ModelMessage]] = field(default_factory=dict)
    source: list[TheirMessage] | None = None  # the pydantic-ai list converted last, and how much of it
    converted: int = 0
    started: bool = False
    answered: bool = False  # a response's calls were answered: their request comes with the next step

    def sync(self, ctx: TheirContext[AgentDepsT], messages: list[TheirMessage] | None = None) -> RunContext[object]:
        """The view with `messages` (default: the context's) as its history. pydantic-ai hands the
        run-level hooks (`before_run`, `after_run`, `on_run_error`) a context without the history:
        an empty list leaves the view's history as the last step hook saw it."""
        messages = ctx.messages if messages is None else messages
        view = self.context
        if messages or self.source is None:
            if self._grown(messages):
                view.messages.extend(self._convert(messages[self.converted :]))
            else:  # a new list (a processor replaced it): walk it, converting only what is new
                view.messages = self._convert(messages)
            self.source, self.converted = messages, len(messages)
        view.run_step = ctx.run_step
        view.metadata[_THEIR_CONTEXT] = ctx
        return view

    def _grown(self, messages: list[TheirMessage]) -> bool:
        """Whether `messages` is the list converted last with messages added at its end (its first
        and last converted messages are the same objects, as the step log itself checks)."""
        if self.source is None or len(messages) < self.converted:
            return False
        if not self.converted:
            return True
        return messages[0] is self.source[0] and messages[self.converted - 1] is self.source[self.converted - 1]

    def _convert(self, messages: list[TheirMessage]) -> list[ModelMessage]:
        fresh = [m for m in messages if (hit := self.seen.get(id(m))) is None or hit[0] is not m]
        for original, converted in zip(fresh, from_pydantic_ai(fresh), strict=True):
            self.seen[id(original)] = (original, converted)
        return [self.seen[id(m)][1] for m in messages]


class StepPersistence(AbstractCapability[AgentDepsT]):
    """Persists a pydantic-ai run step by step into a Threadline `store` under `scope` (see the
    module docstring). Put it first among the agent's capabilities, so it records the history
    the others hand on."""

    def __init__(
        self,
        store: AsyncStore[SyncStore],
        *,
        scope: str | Callable[[TheirContext[AgentDepsT]], str],
        include_content: bool = False,
        allow_unknown_effects: bool = False,
    ) -> None:
        self.store = store
        self._scope = scope
        self._core: ThreadlineStepPersistence[object] = ThreadlineStepPersistence(
            store, scope=self._scope_of, include_content=include_content, allow_unknown_effects=allow_unknown_effects
        )
        self._views: dict[str, _View] = {}

    def __repr__(self) -> str:
        return f'StepPersistence(store={self.store!r})'

    def _scope_of(self, view: RunContext[object]) -> str:
        ctx = view.metadata[_THEIR_CONTEXT]
        scope = self._scope(ctx) if callable(self._scope) else self._scope
        if not isinstance(scope, str) or not scope:
            raise UserError('StepPersistence scope must resolve to a non-empty string')
        return scope

    def _view(self, ctx: TheirContext[AgentDepsT]) -> RunContext[object]:
        run_id = _ids(ctx)[0]
        view = self._views.get(run_id)
        if view is None:
            view = self._views[run_id] = _View(self._new_context(ctx), copy.deepcopy(ctx.usage))
        return view.sync(ctx)

    def _new_context(self, ctx: TheirContext[AgentDepsT]) -> RunContext[object]:
        run_id, conversation_id = _ids(ctx)
        return RunContext(
            deps=ctx.deps, model=_NO_MODEL, usage=RunUsage(), run_id=run_id, conversation_id=conversation_id
        )

    # -- the hooks ---------------------------------------------------------------------------
    async def before_run(self, ctx: TheirContext[AgentDepsT]) -> None:
        # pydantic-ai's run-level context carries no history yet: the run starts (its checks
        # against the stored tip, the ledger and quarantine) at its first step hook, which is
        # before its first model request.
        self._view(ctx)

    async def _started(self, ctx: TheirContext[AgentDepsT]) -> RunContext[object]:
        view = self._view(ctx)
        state = self._views[view.run_id]
        if not state.started:
            state.started = True
            await self._core.before_run(view)
        return view

    async def wrap_run(self, ctx: TheirContext[AgentDepsT], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        try:
            return await handler()
        finally:
            view = self._views.pop(_ids(ctx)[0], None)
            if view is not None:
                await self._core.record_run_left(view.context)

    async def before_model_request(
        self, ctx: TheirContext[AgentDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        view = await self._started(ctx)
        state = self._views[view.run_id]
        if state.answered:
            # pydantic-ai adds the request carrying a response's tool results to the history only
            # when the next model request is made: the answered snapshot is taken here, over it.
            state.answered = False
            await self._core.record_node(view, 'tools_answered')
        await self._core.record_model_request(view)
        return request_context

    async def after_model_request(
        self, ctx: TheirContext[AgentDepsT], *, request_context: ModelRequestContext, response: TheirResponse
    ) -> TheirResponse:
        await self._core.record_model_response(await self._started(ctx), None)
        return response

    async def on_model_request_error(
        self, ctx: TheirContext[AgentDepsT], *, request_context: ModelRequestContext, error: Exception
    ) -> TheirResponse:
        await self._core.record_model_response(await self._started(ctx), error)
        raise error

    async def after_node_run(
        self, ctx: TheirContext[AgentDepsT], *, node: AgentNode[AgentDepsT], result: NodeResult[AgentDepsT]
    ) -> NodeResult[AgentDepsT]:
        if isinstance(node, ModelRequestNode):
            await self._core.record_node(await self._started(ctx), 'model_request')
        elif isinstance(node, CallToolsNode) and isinstance(result, ModelRequestNode):
            self._views[_ids(ctx)[0]].answered = True  # recorded before the next request (above)
        return result

    async def before_tool_execute(
        self, ctx: TheirContext[AgentDepsT], *, call: ToolCallPart, tool_def: ToolDefinition, args: ValidatedToolArgs
    ) -> ValidatedToolArgs:
        await self._core.record_tool_start(await self._started(ctx), call.tool_call_id, call.tool_name)
        return args

    async def after_tool_execute(
        self,
        ctx: TheirContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        result: Any,
    ) -> Any:
        await self._core.record_tool_end(await self._started(ctx), call.tool_call_id, call.tool_name, 'completed', None)
        return result

    async def on_tool_execute_error(
        self,
        ctx: TheirContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        error: Exception,
    ) -> Any:
        summary = None if isinstance(error, ModelRetry) else self._core.error_summary(error)
        await self._core.record_tool_end(await self._started(ctx), call.tool_call_id, call.tool_name, 'failed', summary)
        raise error

    async def after_run(self, ctx: TheirContext[AgentDepsT], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        state = self._views[_ids(ctx)[0]]
        view = state.sync(ctx, result.all_messages())
        if not state.started:  # a run that made no model request (its output was given)
            state.started = True
            await self._core.before_run(view)
        usage = result.usage() if callable(result.usage) else result.usage
        await self._core.record_run_end(view, result.output, usage_from_pydantic_ai(usage - state.start_usage))
        return result

    async def on_run_error(self, ctx: TheirContext[AgentDepsT], *, error: BaseException) -> AgentRunResult[Any]:
        await self._core.record_run_error(self._view(ctx), error)
        raise error


def _ids(ctx: TheirContext[AgentDepsT]) -> tuple[str, str]:
    """The run's ids: pydantic-ai gives every run both (a hand-built context may lack them)."""
    if not ctx.run_id or not ctx.conversation_id:
        raise UserError('StepPersistence needs a run with a run_id and a conversation_id (pydantic-ai sets both)')
    return ctx.run_id, ctx.conversation_id
