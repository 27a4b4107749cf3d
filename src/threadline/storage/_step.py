"""`StepPersistence`: record what each run did, as it does it.

At every boundary of a run the capability writes, in one transaction: the messages the run added
since the last boundary (appended to the conversation log, so a crash loses at most the step in
flight), the events of the step, and a snapshot, which is a position in the log plus `state`
(`'complete'` when every call is answered, else `'interrupted'`). Around each tool body it keeps
a ledger row keyed by `(run_id, tool_call_id)`: `started` is durable before the body runs, so a
row still `started` after a crash means the effect is unknown. A tool records its idempotency key
with `annotate_tool_effect` before its external effect. Events and snapshots carry idempotency
keys, so a retried write is dropped rather than doubled.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from .._errors import error_summary
from ..capabilities import AbstractCapability, ModelRequestContext
from ..exceptions import ConflictError, UnresolvedToolEffect, UserError
from ..messages import ModelMessage, ModelResponse, ToolCallPart
from ..messages._codec import encoder
from ._audit_events import record_repair_events
from ._face import AsyncStore
from ._records import (
    RecoveryInspection,
    RunFinish,
    SnapshotMark,
    StepEvent,
    StepWrite,
    StoredConversation,
    ToolEffect,
)

if TYPE_CHECKING:
    from ..agent import AgentNode, AgentRunResult, NodeResult, RunContext
    from ..models import ToolDefinition

__all__ = ['StepPersistence', 'annotate_tool_effect', 'continue_run', 'fork_run', 'inspect_recovery']


def _now() -> datetime:
    return datetime.now(tz=UTC)


@dataclass
class _RunState:
    conversation_id: str
    scope: str
    revision: int | None
    stored: int = 0
    first: ModelMessage | None = None
    last: ModelMessage | None = None
    events: list[StepEvent] = field(default_factory=list)
    event_index: int = 0
    snapshot_index: int = 0
    repairs_recorded: bool = False


@dataclass(frozen=True)
class _ToolScope:
    persistence: StepPersistence
    state: _RunState
    run_id: str
    tool_call_id: str
    tool_name: str
    started_at: datetime


_current_tool: contextvars.ContextVar[_ToolScope | None] = contextvars.ContextVar('threadline_tool_scope', default=None)


class StepPersistence(AbstractCapability[Any]):
    """Persists a run step by step into `store` under `scope` (a string, or a function of the
    `RunContext`, e.g. reading the tenant from deps). The scope is the server's decision.

    Put it first among capabilities so it records the history other capabilities hand on.

    Errors in step events and the ledger are recorded without their message (type, length and an
    HMAC under the store's audit key; see `threadline._errors`) unless `include_content=True`:
    an exception's text often carries the data the tool failed on.

    Safe by default after a crash: a run over a conversation whose ledger holds a tool call that
    started and never finished (its effect is unknown) is refused with `UnresolvedToolEffect`
    naming the call, until `reconcile_tool_call` records what really happened. Pass
    `allow_unknown_effects=True` only when the tools are idempotent at their destination.
    """

    def __init__(
        self,
        store: AsyncStore[Any],
        *,
        scope: str | Callable[[Any], str],
        include_content: bool = False,
        allow_unknown_effects: bool = False,
    ) -> None:
        self.store = store
        self._scope = scope
        self.include_content = include_content
        self.allow_unknown_effects = allow_unknown_effects
        self._runs: dict[str, _RunState] = {}
        self._key: bytes | None = None

    def _error(self, error: BaseException) -> str:
        if self.include_content:
            return repr(error)
        if self._key is None:
            self._key = self.store.sync.audit_key()
        return error_summary(error, key=self._key)

    def _scope_for(self, ctx: Any) -> str:
        scope = self._scope(ctx) if callable(self._scope) else self._scope
        if not isinstance(scope, str) or not scope:
            raise UserError('StepPersistence scope must resolve to a non-empty string')
        return scope

    def _event(self, ctx: Any, state: _RunState, kind: str, **fields: Any) -> None:
        key = f'{state.event_index}:{ctx.run_step}:{kind}:{fields.get("tool_call_id") or ""}'
        state.event_index += 1
        state.events.append(StepEvent(ctx.run_id, kind, ctx.run_step, _now(), idempotency_key=key, **fields))  # type: ignore[arg-type]

    async def _flush(
        self,
        ctx: Any,
        state: _RunState,
        *,
        snapshot: Literal['complete', 'interrupted'] | None = None,
        effect: ToolEffect | None = None,
        register: bool = False,
        messages: bool = True,
        finish: RunFinish | None = None,
    ) -> None:
        """One transaction: new messages (or a rewritten history), pending events, a snapshot, a ledger row."""
        history = ctx.messages
        new: list[ModelMessage] = []
        rewritten: list[ModelMessage] | None = None
        if messages:
            unchanged = len(history) >= state.stored and (
                state.stored == 0 or (history[0] is state.first and history[state.stored - 1] is state.last)
            )
            if unchanged:
                new = history[state.stored :]
            else:
                rewritten = list(history)
        events, state.events = state.events, []
        mark = None
        if snapshot is not None:
            mark = SnapshotMark(snapshot, ctx.run_step, f'{state.snapshot_index}:{ctx.run_step}:{snapshot}')
            state.snapshot_index += 1
        state.revision = await self.store.step_write(
            StepWrite(
                state.conversation_id,
                state.scope,
                ctx.run_id,
                state.revision,
                messages=new,
                history=rewritten,
                events=events,
                snapshot=mark,
                effect=effect,
                register=register,
                finish=finish,
            )
        )
        if messages and history:
            state.stored, state.first, state.last = len(history), history[0], history[-1]

    # -- hooks ------------------------------------------------------------------------------
    async def before_run(self, ctx: RunContext[Any]) -> None:
        scope = self._scope_for(ctx)
        if self._key is None and not self.include_content:
            self._key = await self.store.audit_key()
        existing = await self.store.conversation_state(ctx.conversation_id, scope=scope)
        if existing is not None and not self.allow_unknown_effects:
            effects = await self.store.tool_effects_for_conversation(ctx.conversation_id, scope=scope)
            refuse_unknown_effects(ctx.conversation_id, effects)
        state = _RunState(ctx.conversation_id, scope, existing[0] if existing else None)
        self._runs[ctx.run_id] = state
        history = ctx.messages
        if existing is not None and existing[1] > 0:
            await self._check_not_stale(ctx, state, existing)
        self._event(ctx, state, 'run_started')
        # A history the store has not seen is imported as the caller's (provenance 'client'): the
        # store cannot vouch for it, so the audit will not either.
        imported = bool(history) and (existing is None or existing[1] == 0)
        # A settled snapshot at run start: a crash before the first model request is resumable too.
        start: Literal['complete', 'interrupted'] = 'complete' if _settled(history) else 'interrupted'
        await self._flush(ctx, state, register=True, messages=imported, snapshot=start)
        if imported:
            state.stored, state.first, state.last = len(history), history[0], history[-1]

    async def _check_not_stale(self, ctx: RunContext[Any], state: _RunState, existing: tuple[int, int]) -> None:
        """The run's history must hold what is stored: the same stored tip, at the same place. A
        run over a history loaded before another writer appended to it would otherwise store its
        turn on top of theirs (or rewrite them away); it is refused with `ConflictError` instead.
        A history that run-start repair changed is stored as a rewrite (a branch), as before."""
        history, length = ctx.messages, existing[1]
        if ctx.repair_events:
            return
        if len(history) >= length:
            tip = (await self.store.load(state.conversation_id, scope=state.scope, last=1)).messages[-1]
            if encoder.encode(tip) == encoder.encode(history[length - 1]):
                state.stored, state.first, state.last = length, history[0], history[length - 1]
                return
        self._runs.pop(ctx.run_id, None)
        raise ConflictError(
            f'conversation {state.conversation_id!r} holds {length} stored messages that this run was not given '
            f'(it was given {len(history)}): another writer changed it since it was loaded, or a window of it was '
            'passed. Load it again and run over what is stored.',
            conversation_id=state.conversation_id,
            expected=None,
            actual=existing[0],
        )

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        state = self._runs.get(ctx.run_id)
        if state is not None:
            self._event(ctx, state, 'model_request_started')
            await self._flush(ctx, state)
            if ctx.repair_events and not state.repairs_recorded:
                # The run-start repair changed the stored history: keep content-free audit events.
                state.repairs_recorded = True
                await asyncio.to_thread(
                    record_repair_events,
                    self.store,
                    list(ctx.repair_events),
                    conversation_id=state.conversation_id,
                    scope=state.scope,
                )
        return request_context

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        state = self._runs.get(ctx.run_id)
        if state is not None:
            self._event(ctx, state, 'model_request_completed')
        return response

    async def on_model_request_error(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        state = self._runs.get(ctx.run_id)
        if state is not None:
            self._event(ctx, state, 'model_request_failed', error=self._error(error))
        raise error

    async def after_node_run(self, ctx: RunContext[Any], *, node: AgentNode, result: NodeResult) -> NodeResult:
        from ..agent import CallToolsNode, ModelRequestNode

        state = self._runs.get(ctx.run_id)
        if state is None:
            return result
        if isinstance(node, ModelRequestNode):
            last = ctx.messages[-1] if ctx.messages else None
            open_calls = isinstance(last, ModelResponse) and any(isinstance(p, ToolCallPart) for p in last.parts)
            await self._flush(ctx, state, snapshot='interrupted' if open_calls else 'complete')
        elif isinstance(node, CallToolsNode) and isinstance(result, ModelRequestNode):
            await self._flush(ctx, state, snapshot='complete')
        return result

    async def before_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any]
    ) -> dict[str, Any]:
        state = self._runs.get(ctx.run_id)
        if state is None:
            return args
        started = _now()
        self._event(ctx, state, 'tool_call_started', tool_call_id=call.tool_call_id, tool_name=call.tool_name)
        effect = ToolEffect(ctx.run_id, call.tool_call_id, call.tool_name, 'started', started)
        await self._flush(ctx, state, effect=effect, messages=False)
        _current_tool.set(_ToolScope(self, state, ctx.run_id, call.tool_call_id, call.tool_name, started))
        return args

    async def after_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any], result: Any
    ) -> Any:
        await self._finish_tool(ctx, call, 'completed', None)
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
        from ..exceptions import ModelRetry

        await self._finish_tool(ctx, call, 'failed', None if isinstance(error, ModelRetry) else self._error(error))
        raise error

    async def _finish_tool(
        self, ctx: Any, call: ToolCallPart, status: Literal['completed', 'failed'], error: str | None
    ) -> None:
        state = self._runs.get(ctx.run_id)
        if state is None:
            return
        self._event(
            ctx,
            state,
            'tool_call_completed' if status == 'completed' else 'tool_call_failed',
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            error=error,
        )
        effect = ToolEffect(
            ctx.run_id,
            call.tool_call_id,
            call.tool_name,
            status,
            _now(),
            _now(),
            summary=error,
        )
        await self._flush(ctx, state, effect=effect, messages=False)

    async def after_run(self, ctx: RunContext[Any], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        import json

        from ._neutral import to_python_output

        state = self._runs.pop(ctx.run_id, None)
        if state is None:
            return result
        self._event(ctx, state, 'run_completed')
        try:
            output = json.dumps(to_python_output(result.output))
        except (TypeError, ValueError):
            output = json.dumps(repr(result.output))
        await self._flush(
            ctx,
            state,
            snapshot='complete' if _settled(ctx.messages) else 'interrupted',
            finish=RunFinish(ctx.run_id, 'completed', output, result.run_usage),
        )
        return result

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> AgentRunResult[Any]:
        state = self._runs.pop(ctx.run_id, None)
        if state is not None:
            self._event(ctx, state, 'run_failed', error=self._error(error))
            with contextlib.suppress(Exception):  # the run's own error is the one to report
                await self._flush(ctx, state, snapshot='interrupted', finish=RunFinish(ctx.run_id, 'failed'))
        raise error


def _settled(history: list[ModelMessage]) -> bool:
    last = history[-1] if history else None
    return not (isinstance(last, ModelResponse) and any(isinstance(p, ToolCallPart) for p in last.parts))


def annotate_tool_effect(
    ctx: RunContext[Any] | None = None, *, idempotency_key: str | None = None, summary: str | None = None
) -> None:
    """Record, before a tool's external effect, how to find that effect later (an idempotency key,
    a short summary). Durable when it returns; a no-op outside a tool run under StepPersistence.

    Call it from inside the tool body, before the side effect: after a crash the ledger row (still
    `started`) then tells the operator which key to look up at the destination.
    """
    scope = _current_tool.get()
    if scope is None:
        return
    effect = ToolEffect(
        scope.run_id,
        scope.tool_call_id,
        scope.tool_name,
        'started',
        scope.started_at,
        idempotency_key=idempotency_key,
        summary=summary,
    )
    store = scope.persistence.store.sync
    store.record_tool_effect(effect, conversation_id=scope.state.conversation_id, scope=scope.state.scope)


async def inspect_recovery(store: AsyncStore[Any], run_id: str, *, scope: str) -> RecoveryInspection:
    """What the store knows about `run_id` in `scope`: latest snapshot, latest settled one, and its
    tool effects, with calls still `started` reported as unknown (read-only; not permission to
    replay). A run of another scope looks exactly like one that does not exist."""
    run = await store.get_run(run_id, scope=scope)
    snapshots = await store.list_snapshots(run_id, scope=scope)
    effects = await store.tool_effects(run_id, scope=scope)
    events = await store.list_events(run_id, scope=scope)
    settled = [s for s in snapshots if s.state == 'complete']
    return RecoveryInspection(
        run_id=run_id,
        conversation_id=run.conversation_id if run else None,
        latest=snapshots[-1] if snapshots else None,
        latest_settled=settled[-1] if settled else None,
        unknown=[e for e in effects if e.status == 'started'],
        completed=[e for e in effects if e.status == 'completed'],
        failed=[e for e in effects if e.status == 'failed'],
        events=events,
    )


async def continue_run(
    store: AsyncStore[Any],
    run_id: str,
    *,
    scope: str,
    include_interrupted: bool = False,
    allow_unknown_effects: bool = False,
) -> StoredConversation:
    """The conversation as of the run's latest (settled, unless `include_interrupted`) snapshot.

    Refuses (`UnresolvedToolEffect`) while the run's ledger holds a tool call whose effect is
    unknown, unless `allow_unknown_effects=True`: continuing would let the model make it again.
    """
    if not allow_unknown_effects:
        refuse_unknown_effects(run_id, await store.tool_effects(run_id, scope=scope))
    snapshots = [
        s for s in await store.list_snapshots(run_id, scope=scope) if include_interrupted or s.state == 'complete'
    ]
    if not snapshots:
        raise LookupError(f'run {run_id!r} has no {"" if include_interrupted else "settled "}snapshot')
    snap = snapshots[-1]
    stored = await store.load(snap.conversation_id, scope=scope)
    messages = await store.load_at(snap.conversation_id, scope=scope, branch_id=snap.branch_id, position=snap.position)
    stored.messages, stored.offset, stored.length = messages, 0, snap.position
    return stored


async def fork_run(
    store: AsyncStore[Any], run_id: str, *, scope: str, include_interrupted: bool = False
) -> StoredConversation:
    """A new conversation sharing the history up to the run's latest snapshot (no copy)."""
    snapshots = [
        s for s in await store.list_snapshots(run_id, scope=scope) if include_interrupted or s.state == 'complete'
    ]
    if not snapshots:
        raise LookupError(f'run {run_id!r} has no {"" if include_interrupted else "settled "}snapshot')
    snap = snapshots[-1]
    fork_id = await store.fork(snap.conversation_id, scope=scope, at=snap.position)
    return await store.load(fork_id, scope=scope)


def refuse_unknown_effects(where: str, effects: Sequence[ToolEffect]) -> None:
    """Raise `UnresolvedToolEffect` naming the first tool call that started and never finished."""
    unknown = [e for e in effects if e.status == 'started']
    if not unknown:
        return
    first = unknown[0]
    key = f', idempotency key {first.idempotency_key!r}' if first.idempotency_key else ''
    raise UnresolvedToolEffect(
        f'{where}: tool call {first.tool_call_id!r} ({first.tool_name}{key}) started and never finished, so its '
        f'effect is unknown ({len(unknown)} such call(s)). Check the destination, then record what happened with '
        'threadline.audit.reconcile_tool_call(store, conversation_id, tool_call_id, scope=..., result=..., '
        'evidence=...); or pass allow_unknown_effects=True if the tool is idempotent at its destination.'
    )
