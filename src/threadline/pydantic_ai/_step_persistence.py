"""`StepPersistence` for a pydantic-ai `Agent`: Threadline's step writes, driven by its hooks.

    agent = Agent('openai:gpt-5.2', capabilities=[StepPersistence(store, scope='tenant-1')])

The writes are Threadline's own (`threadline.steps.StepPersistence`): the same transactions,
syncs, ledger rows and snapshots (positions in the conversation log), so a pydantic-ai run has
the guarantees a Threadline run has. This module only translates: each pydantic-ai hook calls the
matching step operation over a *view* of the run, a Threadline `RunContext` whose `messages` are
the run's history as Threadline messages.

Rules (each tested in `tests/pydantic_ai/test_step_persistence.py`):
- The view is kept per run and converted incrementally, by identity (`_view.RunView`): a hook
  converts only the messages added since the last one, so its cost does not grow with the history.
- pydantic-ai adds the request carrying a response's tool results to the history when it makes
  the next model request: the snapshot of the answered calls is taken then, over that request.
- The run's checks against the store (its stored tip, the ledger, quarantine) are made over the
  history the run was given, at the start of its `UserPromptNode` (pydantic-ai's `before_run`
  sees no history yet, and its history processors rewrite it before the first model request), or
  at its first step hook when it has no such node; either way before any model request or tool.
- The run's own usage is what pydantic-ai's `ctx.usage` gained during the run (a run given
  `usage=` starts from that total).
- `scope` is a string or a function of pydantic-ai's `RunContext` (the server's decision, never
  the model's), resolved once per run.
- A run over a conversation whose ledger holds a call that started and never finished is refused
  with `UnresolvedToolEffect` until `reconcile_tool_call` records what happened, as for
  Threadline's own `Agent`.
- Inside a DBOS workflow (pydantic-ai's `DBOSDurability`), the run start's read and each write
  are DBOS steps (`threadline.store.run_start`, `threadline.store.step_write`), as under
  Threadline's `DBOSDurability`: a workflow replayed after a crash skips what its first attempt
  stored, so the conversation is stored once (`tests/durable/test_beside_pydantic_ai.py`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from pydantic_ai import (
    AgentRunResult,
    CallToolsNode,
    ModelRequestContext,
    ModelRequestNode,
    ModelRetry,
    UserPromptNode,
)
from pydantic_ai import RunContext as TheirContext
from pydantic_ai.capabilities import AbstractCapability, AgentNode, NodeResult, ValidatedToolArgs, WrapRunHandler
from pydantic_ai.messages import ModelResponse as TheirResponse
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import AgentDepsT, ToolDefinition

import threadline.durable as durable
from threadline._public import publish
from threadline.agent import RunContext
from threadline.exceptions import UserError
from threadline.pydantic_ai._bridge import usage_from_pydantic_ai
from threadline.pydantic_ai._view import THEIR_CONTEXT, RunViews
from threadline.steps import DURABLE_IO, DurableIO
from threadline.steps import StepPersistence as ThreadlineStepPersistence
from threadline.storage import AsyncStore, SyncStore

__all__ = ['StepPersistence']


class StepPersistence(AbstractCapability[AgentDepsT]):
    """Persists a pydantic-ai run step by step into a Threadline `store` under `scope` (see the
    module docstring). Put it first among the agent's capabilities, so it records the history
    the others hand on. `agent_name` and `parent_run_id` (by default, the run whose tool started
    this one) go on the run record, as the harness records them."""

    id: str | None = 'step_persistence'  # the harness's id for the same capability

    def __init__(
        self,
        store: AsyncStore[SyncStore],
        *,
        scope: str | Callable[[TheirContext[AgentDepsT]], str],
        include_content: bool = False,
        allow_unknown_effects: bool = False,
        agent_name: str | None = None,
        parent_run_id: str | None = None,
    ) -> None:
        self.store = store
        self._scope = scope
        self._core: ThreadlineStepPersistence[object] = ThreadlineStepPersistence(
            store,
            scope=self._scope_of,
            include_content=include_content,
            allow_unknown_effects=allow_unknown_effects,
            agent_name=agent_name,
            parent_run_id=parent_run_id,
        )
        self._views = RunViews()

    def __repr__(self) -> str:
        return f'StepPersistence(store={self.store!r})'

    def _scope_of(self, view: RunContext[object]) -> str:
        ctx = view.metadata[THEIR_CONTEXT]
        scope = self._scope(ctx) if callable(self._scope) else self._scope
        if not isinstance(scope, str) or not scope:
            raise UserError('StepPersistence scope must resolve to a non-empty string')
        return scope

    def _view(self, ctx: TheirContext[AgentDepsT]) -> RunContext[object]:
        return self._views.sync(ctx)

    # -- the hooks ---------------------------------------------------------------------------
    async def before_run(self, ctx: TheirContext[AgentDepsT]) -> None:
        # pydantic-ai's run-level context carries no history yet: the run starts (its checks
        # against the stored tip, the ledger and quarantine) at its first step hook, which is
        # before its first model request.
        self._view(ctx)

    async def _started(self, ctx: TheirContext[AgentDepsT]) -> RunContext[object]:
        view = self._view(ctx)
        state = self._views[view.run_id]
        if 'started' not in state.flags:
            state.flags.add('started')
            await self._core.before_run(view)
        return view

    async def wrap_run(self, ctx: TheirContext[AgentDepsT], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        io = _workflow_io()
        token = DURABLE_IO.set(io) if io is not None else None
        try:
            with self._core.running(str(ctx.run_id)):  # a delegate run inside it records it as parent
                return await handler()
        finally:
            view = self._views.drop(ctx)
            if view is not None:
                await self._core.record_run_left(view.context)
            if token is not None:
                DURABLE_IO.reset(token)

    async def before_model_request(
        self, ctx: TheirContext[AgentDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        view = await self._started(ctx)
        state = self._views[view.run_id]
        if 'answered' in state.flags:
            # pydantic-ai adds the request carrying a response's tool results to the history only
            # when the next model request is made: the answered snapshot is taken here, over it.
            state.flags.discard('answered')
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

    async def before_node_run(
        self, ctx: TheirContext[AgentDepsT], *, node: AgentNode[AgentDepsT]
    ) -> AgentNode[AgentDepsT]:
        if isinstance(node, UserPromptNode):
            # The one hook that sees the history the run was given, before pydantic-ai adds the
            # prompt and history processors rewrite it: the run starts (its checks) over that.
            await self._started(ctx)
        return node

    async def after_node_run(
        self, ctx: TheirContext[AgentDepsT], *, node: AgentNode[AgentDepsT], result: NodeResult[AgentDepsT]
    ) -> NodeResult[AgentDepsT]:
        if isinstance(node, ModelRequestNode):
            await self._core.record_node(await self._started(ctx), 'model_request')
        elif isinstance(node, CallToolsNode) and isinstance(result, ModelRequestNode):
            self._views.of(ctx).flags.add('answered')  # recorded before the next request (above)
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
        state = self._views.of(ctx)
        view = state.sync(ctx, result.all_messages())
        if 'started' not in state.flags:  # a run that made no model request (its output was given)
            state.flags.add('started')
            await self._core.before_run(view)
        usage = result.usage() if callable(result.usage) else result.usage
        await self._core.record_run_end(view, result.output, usage_from_pydantic_ai(usage - state.start_usage))
        return result

    async def on_run_error(self, ctx: TheirContext[AgentDepsT], *, error: BaseException) -> AgentRunResult[Any]:
        await self._core.record_run_error(self._view(ctx), error)
        raise error


def _workflow_io() -> DurableIO | None:
    """Inside a DBOS workflow (pydantic-ai's `DBOSDurability` runs the agent in one), the store
    reads and writes as DBOS steps, so a replay skips what the first attempt wrote. dbos is an
    extra: if nothing imported it, no workflow is running."""
    dbos = sys.modules.get('dbos')
    if DURABLE_IO.get() is not None or dbos is None or dbos.DBOS.workflow_id is None:
        return None
    store_step: DurableIO = durable.dbos_store_step  # loads threadline.durable._dbos (dbos is loaded)
    return store_step


publish('threadline.pydantic_ai', globals(), ['StepPersistence'])  # loaded on first use, through the package
