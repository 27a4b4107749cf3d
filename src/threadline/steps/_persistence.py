"""`StepPersistence`: record what each run did, as it does it.

At the boundaries of a run the capability writes, each time in one transaction: the messages the
run added since the last write (appended to the conversation log, so a crash loses at most the
step in flight), the events of the step, a snapshot (a position in the log plus `state`:
`'complete'` when every call is answered, else `'interrupted'`), and the tool ledger's rows, keyed
by `(run_id, tool_call_id)`. Events and snapshots carry idempotency keys, so a retried write is
dropped rather than doubled. A tool records its idempotency key with `annotate_tool_effect`
before its external effect.

Which writes are synced to disk, and why. A tool-calling turn costs two syncs, and the run
waits for both:
1. Before a tool body runs: the response that called it and the ledger row `started`. After a
   crash, even a power loss, a call with an effect in the world must never be missing from the
   ledger. The calls of one response share this commit (a group commit).
2. When the run ends, finished or failed: the last response and the run record, so a run the
   caller saw finish stays finished.
Everything else is committed, atomically and so that killing the process loses none of it,
without waiting for the disk (`StepWrite.durable=False`); the next sync makes it durable, since
the database's log is synced in order. That covers the run's registration and its new prompt
before the first model request (a power loss during that request loses the run's start, which
no one outside the process has seen yet), a final response before its output is processed,
events, and the answers to a response's tool calls: the tool results, the rows
`completed`/`failed` and a settled snapshot, in one commit that goes behind the next model
request. A power loss before the next sync loses that commit whole, results and rows together,
so the rows read `started` (effect unknown), exactly what a crash inside the tool leaves: no row
ever claims an effect whose result was lost. That is the step in flight, which is what the log
may lose anyway. Writes with nothing but events wait for the next write.

The write before a model request goes *behind* it: it commits once the request is under way
(in the event loop when the store can start it at once, as it needs no sync; else in a worker
thread), and the next write waits for it (and raises its error, such as a conflict). A
crash at any instant leaves the store either before or after that commit, as it would if the run
had waited, so going behind changes what the run waits for, never what a crash may lose. A write
behind that has not reached the store when the next write is made (the model answered before
the event loop got to it) is carried by that write instead: one transaction, the store left as
if the first had not committed yet, which it may not have. Only its snapshot is not kept, so it is
carried only when the next write's snapshot takes that one's place (`RunLog._may_carry_behind`). So that
no first model request is made for a conversation the store would refuse, the run start checks
what the first write would: the stored tip (`ConflictError`) and quarantine
(`ConversationQuarantined`), and the ledger (`UnresolvedToolEffect`). A writer that changes the
conversation during the run is caught by the next write, after at most one more model request.

The run start's read is made in `before_run`, in the event loop when the store can make it at
once (see "What runs in the event loop" below). Else it goes behind the run's setup in the same
way as a write: `before_run` starts it in a worker thread, and the first hook that needs the run's
records waits for it, which is at the latest before the first model request or tool call. Its
checks are made against the history the run started with. A run that fails before any hook waited
reports the refusal, if the read refused the run, as it would have had `before_run` waited.

What runs in the event loop. A thread hop costs two thread wake-ups, about 0.35 ms on a VM whose
CPUs idle while the model answers: more than the run start's read costs, and a third of a synced
write. So the operations a run waits for and that are bounded by one step (the run start's read,
the two synced writes above, unless a write rewrites the history) run in the event loop when the
store can start them at once, and in a worker thread otherwise (the rules are listed on
`AsyncStore._in_loop_or_thread`). So do the unsynced writes that go behind a model request,
once the request is under way: the loop is otherwise idle while the model answers, and a model
that answers at once would otherwise wait for the hop. (Measured at 20k messages, instant model:
two hops and a third sync were 1.7 ms of a 6 ms turn.)

Lineage. The run record keeps `agent_name` (when given) and `parent_run_id`: given, or else the
run this one was started inside (a delegate an orchestrator's tool calls: `running` marks the
enclosing run for the calls made within it), as pydantic-ai-harness names them; the registering
write carries them.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from threadline._errors import error_summary
from threadline.agent import CallToolsNode, ModelRequestNode
from threadline.agent.capability import AbstractCapability, CapabilityDepsT, ModelRequestContext
from threadline.audit import record_repair_events
from threadline.exceptions import ConflictError, ModelRetry, UserError
from threadline.messages import ModelMessage, ModelResponse, RunUsage, ToolCallPart
from threadline.messages.wire import encoder
from threadline.steps._durable_io import DURABLE_IO
from threadline.steps._log import RunLog
from threadline.steps._recovery import refuse_unknown_effects
from threadline.steps._tool_scope import CURRENT_TOOL, ToolScope
from threadline.storage import AsyncStore, RunFinish, RunLineage, RunStart, SyncStore, ToolEffect
from threadline.storage.extend import NotNow, quarantined, to_python_output

if TYPE_CHECKING:
    from threadline.agent import AgentNode, AgentRunResult, NodeResult, RunContext
    from threadline.models import ToolDefinition

__all__ = ['StepPersistence']


def _now() -> datetime:
    return datetime.now(tz=UTC)


_enclosing_run: contextvars.ContextVar[str | None] = contextvars.ContextVar('threadline_enclosing_run', default=None)


class StepPersistence(AbstractCapability[CapabilityDepsT]):
    """Persists a run step by step into `store` under `scope` (a string, or a function of the
    `RunContext`, e.g. reading the tenant from deps). The scope is the server's decision.

    Put it first among capabilities so it records the history other capabilities hand on.
    `agent_name` and `parent_run_id` go on the run record (see "Lineage" in the module docstring).

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
        store: AsyncStore[SyncStore],
        *,
        scope: str | Callable[[RunContext[CapabilityDepsT]], str],
        include_content: bool = False,
        allow_unknown_effects: bool = False,
        agent_name: str | None = None,
        parent_run_id: str | None = None,
    ) -> None:
        self.store = store
        self._scope = scope
        self.include_content = include_content
        self.allow_unknown_effects = allow_unknown_effects
        self.agent_name, self.parent_run_id = agent_name, parent_run_id
        self._parents: dict[str, str | None] = {}
        self._runs: dict[str, RunLog] = {}
        self._opening: dict[str, asyncio.Future[None]] = {}
        self._key: bytes | None = None

    def error_summary(self, error: BaseException) -> str:
        """`error` as step events and the ledger record it (content-free unless `include_content`)."""
        return self._error(error)

    def _error(self, error: BaseException) -> str:
        if self.include_content:
            return repr(error)
        if self._key is None:
            self._key = self.store.sync.audit_key()
        return error_summary(error, key=self._key)

    def _scope_for(self, ctx: RunContext[CapabilityDepsT]) -> str:
        scope = self._scope(ctx) if callable(self._scope) else self._scope
        if not isinstance(scope, str) or not scope:
            raise UserError('StepPersistence scope must resolve to a non-empty string')
        return scope

    # -- hooks ------------------------------------------------------------------------------
    async def before_run(self, ctx: RunContext[CapabilityDepsT]) -> None:
        scope = self._scope_for(ctx)
        started, repaired = (ctx.run_step, _now()), bool(ctx.repair_events)
        io = DURABLE_IO.get()
        if io is not None:  # a durable run: the read is a step, answering the same on a replay
            durable_start: RunStart | None = await io('run_start', self._read_start, ctx.conversation_id, scope)
            self._open(ctx, scope, durable_start, ctx.messages, repaired, started)
            return
        # The run start's read is a few index descents: done here when the store can do it at
        # once (`AsyncStore._in_loop_or_thread`), and checked against the history as it is now.
        start = self.store._try_in_loop(self._read_start, ctx.conversation_id, scope)
        if not isinstance(start, NotNow):
            self._open(ctx, scope, start, ctx.messages, repaired, started)
            return
        # Else it goes behind the run's setup (module docstring): the first hook that needs the
        # run's records waits for it, and no model request or tool runs before that. The history
        # is copied, since the run may change it in place before the read is back.
        read = asyncio.get_running_loop().run_in_executor(None, self._read_start, ctx.conversation_id, scope)
        history = list(ctx.messages)
        self._opening[ctx.run_id] = asyncio.ensure_future(
            self._open_behind(ctx, scope, read, history, repaired, started)
        )

    def _read_start(self, conversation_id: str, scope: str) -> RunStart | None:
        """What a run start needs from the store, in one read."""
        store = self.store.sync
        if self._key is None and not self.include_content:
            self._key = store.audit_key()
        start: RunStart | None = store.run_start(conversation_id, scope=scope)
        if start is not None and start.quarantined:
            # Refused before the first model request: the first write, which the store would
            # refuse too, goes behind that request (see the module docstring).
            raise quarantined(conversation_id)
        return start

    async def _open_behind(
        self,
        ctx: RunContext[CapabilityDepsT],
        scope: str,
        read: asyncio.Future[RunStart | None],
        history: list[ModelMessage],
        repaired: bool,
        started: tuple[int, datetime],
    ) -> None:
        self._open(ctx, scope, await read, history, repaired, started)

    def _open(
        self,
        ctx: RunContext[CapabilityDepsT],
        scope: str,
        start: RunStart | None,
        history: list[ModelMessage],
        repaired: bool,
        started: tuple[int, datetime],
    ) -> None:
        """Check what the read found against the history the run started with, then keep the
        run's records: refused on unresolved tool effects, or if another writer got there first."""
        if start is not None and not self.allow_unknown_effects:
            refuse_unknown_effects(ctx.conversation_id, start.unresolved)
        state = RunLog(self.store, ctx.conversation_id, scope, start.revision if start else None)
        parent = self.parent_run_id or self._parents.get(ctx.run_id)
        if parent is not None or self.agent_name is not None:
            state.lineage = RunLineage(parent_run_id=parent, agent_name=self.agent_name)
        if start is not None and start.tip is not None and not repaired:
            self._check_not_stale(state, history, start.length, start.tip)
        state.event(ctx, 'run_started', at=started)
        self._runs[ctx.run_id] = state

    async def _state(self, ctx: RunContext[CapabilityDepsT]) -> RunLog | None:
        """The run's records, once its start is checked (waiting for that, and raising its error)."""
        opening = self._opening.get(ctx.run_id)
        if opening is not None:
            try:
                await asyncio.shield(opening)  # every hook of the run waits for the same opening
            finally:
                if opening.done():  # else (the hook was cancelled) `wrap_run` settles it
                    self._opening.pop(ctx.run_id, None)
        return self._runs.get(ctx.run_id)

    async def _settle_opening(self, ctx: RunContext[CapabilityDepsT]) -> BaseException | None:
        """Wait for a run start still under way when the run ends; its error, if it refused the
        run (returned, not raised: the caller decides which error the run reports)."""
        opening = self._opening.pop(ctx.run_id, None)
        if opening is None:
            return None
        try:
            await asyncio.shield(opening)
        except Exception as refusal:  # noqa: BLE001 - handed to the caller
            return refusal
        return None

    def _check_not_stale(self, state: RunLog, history: list[ModelMessage], length: int, tip: ModelMessage) -> None:
        """The run's history must hold what is stored: the same stored tip, at the same place. A
        run over a history loaded before another writer appended to it would otherwise store its
        turn on top of theirs (or rewrite them away); it is refused with `ConflictError` instead.
        A history that run-start repair changed is stored as a rewrite (a branch), as before."""
        if len(history) >= length and encoder.encode(tip) == encoder.encode(history[length - 1]):
            state.pin(history, length)
            return
        raise ConflictError(
            f'conversation {state.conversation_id!r} holds {length} stored messages that this run was not given '
            f'(it was given {len(history)}): another writer changed it since it was loaded, or a window of it was '
            'passed. Load it again and run over what is stored.',
            conversation_id=state.conversation_id,
            expected=None,
            actual=state.revision,
        )

    async def before_model_request(
        self, ctx: RunContext[CapabilityDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        await self.record_model_request(ctx)
        return request_context

    # -- the step operations, which the hooks above and below call (and so does the pydantic-ai
    # capability, `threadline.pydantic_ai.StepPersistence`, over a Threadline view of its run)
    async def record_model_request(self, ctx: RunContext[CapabilityDepsT]) -> None:
        """Before a model request: its event, and the write of what the run added (behind it)."""
        state = await self._state(ctx)
        if state is not None:
            state.event(ctx, 'model_request_started')
            if not state.registered:
                # The first write registers the run and stores what the store has not seen, with
                # a snapshot: a crash during this first request is resumable too.
                state.snapshot = 'complete' if _settled(ctx.messages) else 'interrupted'
            # Committed while the request goes on, not synced (module docstring).
            state.write_behind(ctx)
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

    async def after_model_request(
        self, ctx: RunContext[CapabilityDepsT], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        await self.record_model_response(ctx, None)
        return response

    async def on_model_request_error(
        self, ctx: RunContext[CapabilityDepsT], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        await self.record_model_response(ctx, error)
        raise error

    async def record_model_response(self, ctx: RunContext[CapabilityDepsT], error: Exception | None) -> None:
        """A model request ended: answered (`error` None) or failed (its event, without content)."""
        state = await self._state(ctx)
        if state is None:
            return
        if error is None:
            state.event(ctx, 'model_request_completed')
        else:
            state.event(ctx, 'model_request_failed', error=self._error(error))

    async def after_node_run(
        self, ctx: RunContext[CapabilityDepsT], *, node: AgentNode, result: NodeResult
    ) -> NodeResult:
        if isinstance(node, ModelRequestNode):
            await self.record_node(ctx, 'model_request')
        elif isinstance(node, CallToolsNode) and isinstance(result, ModelRequestNode):
            await self.record_node(ctx, 'tools_answered')
        # else nothing to record: the run start's read may go on behind the next node
        return result

    async def record_node(
        self, ctx: RunContext[CapabilityDepsT], kind: Literal['model_request', 'tools_answered']
    ) -> None:
        """After a model request node (the snapshot due), or after the tool calls of a response
        were answered and the run goes on to the next request (their write, behind it)."""
        state = await self._state(ctx)
        if state is None:
            return
        if kind == 'model_request':
            # Written by the next write: the first tool call's `started` row, the end of the run,
            # or the request that retries an output.
            state.snapshot = 'complete' if _settled(ctx.messages) else 'interrupted'
        else:
            state.snapshot = 'complete'
            state.write_behind(ctx)  # the answers: not synced on their own (module docstring)

    async def before_tool_execute(
        self, ctx: RunContext[CapabilityDepsT], *, call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any]
    ) -> dict[str, Any]:
        await self.record_tool_start(ctx, call.tool_call_id, call.tool_name)
        return args

    async def record_tool_start(self, ctx: RunContext[CapabilityDepsT], tool_call_id: str, tool_name: str) -> None:
        """Before a tool body runs: its `started` row, synced (grouped with its siblings')."""
        state = await self._state(ctx)
        if state is None:
            return
        started = _now()
        state.event(ctx, 'tool_call_started', tool_call_id=tool_call_id, tool_name=tool_name)
        effect = ToolEffect(ctx.run_id, tool_call_id, tool_name, 'started', started)
        state.effects.append(effect)
        await asyncio.sleep(0)  # sibling calls of the same response queue their rows: one commit
        await state.flush(ctx, durable=True, needed=effect)
        CURRENT_TOOL.set(ToolScope(self.store, state, ctx.run_id, tool_call_id, tool_name, started))

    async def after_tool_execute(
        self,
        ctx: RunContext[CapabilityDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        result: Any,
    ) -> Any:
        await self.record_tool_end(ctx, call.tool_call_id, call.tool_name, 'completed', None)
        return result

    async def on_tool_execute_error(
        self,
        ctx: RunContext[CapabilityDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        error: Exception,
    ) -> Any:

        summary = None if isinstance(error, ModelRetry) else self._error(error)
        await self.record_tool_end(ctx, call.tool_call_id, call.tool_name, 'failed', summary)
        raise error

    async def record_tool_end(
        self,
        ctx: RunContext[CapabilityDepsT],
        tool_call_id: str,
        tool_name: str,
        status: Literal['completed', 'failed'],
        error: str | None,
    ) -> None:
        """After a tool body: its row `completed` or `failed` (written with the step's results)."""
        state = await self._state(ctx)
        if state is None:
            return
        state.event(
            ctx,
            'tool_call_completed' if status == 'completed' else 'tool_call_failed',
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            error=error,
        )
        effect = ToolEffect(
            ctx.run_id,
            tool_call_id,
            tool_name,
            status,
            _now(),
            _now(),
            summary=error,
        )
        state.effects.append(effect)  # synced with the step's results (rule 2 above)

    async def after_run(self, ctx: RunContext[CapabilityDepsT], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        await self.record_run_end(ctx, result.output, result.run_usage)
        return result

    async def record_run_end(self, ctx: RunContext[CapabilityDepsT], output: object, usage: RunUsage) -> None:
        """The run finished with `output`, having used `usage` itself: the last write, synced."""
        await self._state(ctx)
        state = self._runs.pop(ctx.run_id, None)
        if state is None:
            return
        state.event(ctx, 'run_completed')
        try:
            text = json.dumps(to_python_output(output))
        except (TypeError, ValueError):
            text = json.dumps(repr(output))
        state.snapshot = 'complete' if _settled(ctx.messages) else 'interrupted'
        await state.flush(ctx, durable=True, finish=RunFinish(ctx.run_id, 'completed', text, usage))

    async def wrap_run(self, ctx: RunContext[CapabilityDepsT], *, handler: Any) -> Any:
        """A run left any way at all (cancelled, interrupted, abandoned by its caller) still
        finishes the write that went behind its model request before control returns."""
        try:
            with self.running(ctx.run_id):
                return await handler()
        finally:
            await self.record_run_left(ctx)

    @contextlib.contextmanager
    def running(self, run_id: str) -> Iterator[None]:
        """While the run runs: a run started inside it (a delegate an orchestrator's tool calls)
        records it as its `parent_run_id`, unless its capability was given one."""
        self._parents[run_id] = _enclosing_run.get()
        token = _enclosing_run.set(run_id)
        try:
            yield
        finally:
            _enclosing_run.reset(token)
            self._parents.pop(run_id, None)

    async def record_run_left(self, ctx: RunContext[CapabilityDepsT]) -> None:
        """However the run was left: settle its start and the write that went behind it."""
        await self._settle_opening(ctx)
        state = self._runs.pop(ctx.run_id, None)
        if state is not None and state.behind is not None:
            await asyncio.shield(state.behind)

    async def on_run_error(self, ctx: RunContext[CapabilityDepsT], *, error: BaseException) -> AgentRunResult[Any]:
        await self.record_run_error(ctx, error)
        raise error

    async def record_run_error(self, ctx: RunContext[CapabilityDepsT], error: BaseException) -> None:
        """The run failed with `error`: its event and the failure record, synced. The run start's
        refusal, if that is why it failed, is raised instead (from `error`)."""
        refusal = await self._settle_opening(ctx)
        if refusal is not None:
            # The run failed before any hook waited for its start, which refused it: report the
            # refusal, as if the run had waited for its start before anything else.
            raise refusal from error
        state = self._runs.pop(ctx.run_id, None)
        if state is not None:
            state.event(ctx, 'run_failed', error=self._error(error))
            with contextlib.suppress(Exception):  # the run's own error is the one to report
                state.snapshot = 'interrupted'
                await state.flush(ctx, durable=True, finish=RunFinish(ctx.run_id, 'failed'), raise_behind=False)


def _settled(history: list[ModelMessage]) -> bool:
    last = history[-1] if history else None
    return not (isinstance(last, ModelResponse) and any(isinstance(p, ToolCallPart) for p in last.parts))
