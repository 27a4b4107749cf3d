"""One run's pending records and the writes that carry them to the store (for `StepPersistence`).

What the hooks record (events, ledger rows, the snapshot due) waits here until a write takes it,
together with the messages the run added since the last write. Writes of one run never overlap:
each takes the run's lock, so parallel tool calls share the revision they expect. A write that
fails leaves everything it carried pending again, so the next write (or the failure record)
carries it; nothing is dropped and nothing is written twice.

A write can also go *behind*: prepared now, committed while the run goes on (once the event
loop has started the model request it goes behind), and awaited by the next write before it
starts. Only a write that need not be on disk before
anything happens outside the process may go behind: the one before the first model request, and
the tool results before the next one (no tool runs until the next write, which waits). Its error
surfaces at the next write, which carries it instead when it has not gone to the store yet
(`_may_carry_behind` lists when). A write the run waits for, and one that goes behind without waiting
for the disk, runs in the event loop instead of a thread when the store can start it at once
(`AsyncStore._in_loop_or_thread`): a thread hop costs more than such a write, and a model that
answers at once would wait for the hop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal

from threadline.exceptions import UserError
from threadline.messages import ModelMessage
from threadline.steps._durable_io import DURABLE_IO, write_once
from threadline.storage import (
    AsyncStore,
    RunFinish,
    RunLineage,
    SnapshotMark,
    StepEvent,
    StepWrite,
    SyncStore,
    ToolEffect,
)

__all__ = ['RunLog']


@dataclass
class _Undo:
    """What a prepared write took from the log, to put back if it fails."""

    stored: int
    first: ModelMessage | None
    last: ModelMessage | None
    events: list[StepEvent]
    effects: list[ToolEffect]
    snapshot: Literal['complete', 'interrupted'] | None
    registered: bool
    snapshot_index: int


@dataclass
class RunLog:
    """The pending records of one run in one conversation, and its position in the stored log."""

    store: AsyncStore[SyncStore]
    conversation_id: str
    scope: str
    revision: int | None
    stored: int = 0
    """How many messages of the run's history the store holds (`first`/`last` pin which ones)."""
    first: ModelMessage | None = None
    last: ModelMessage | None = None
    events: list[StepEvent] = field(default_factory=list)
    effects: list[ToolEffect] = field(default_factory=list)
    snapshot: Literal['complete', 'interrupted'] | None = None
    """The state of the snapshot the next write records (None: no snapshot is due)."""
    registered: bool = False
    event_index: int = 0
    snapshot_index: int = 0
    repairs_recorded: bool = False
    lineage: RunLineage | None = None
    """Recorded with the run record by the write that registers it."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    behind: asyncio.Future[None] | None = None
    behind_snapshot: Literal['complete', 'interrupted'] | None = None
    """The snapshot state the write behind carries (while it is `behind`)."""
    behind_started: bool = False
    """The write behind has gone to the store: it can no longer be carried by the next write."""
    carry_behind: bool = False
    """The next write carries the write behind, which has not started: it stands down."""

    def event(self, ctx: Any, kind: str, *, at: tuple[int, datetime] | None = None, **fields: Any) -> None:
        """Record an event of the run's current step, now (or at the `(step, time)` it happened)."""
        step, when = at if at is not None else (ctx.run_step, datetime.now(tz=UTC))
        key = f'{self.event_index}:{step}:{kind}:{fields.get("tool_call_id") or ""}'
        self.event_index += 1
        self.events.append(StepEvent(ctx.run_id, kind, step, when, idempotency_key=key, **fields))  # type: ignore[arg-type]

    def pin(self, history: list[ModelMessage], length: int) -> None:
        """The store holds `history[:length]`."""
        self.stored, self.first, self.last = length, history[0], history[length - 1]

    async def flush(
        self,
        ctx: Any,
        *,
        durable: bool,
        finish: RunFinish | None = None,
        needed: ToolEffect | None = None,
        raise_behind: bool = True,
    ) -> None:
        """Write what is pending in one transaction. With `needed`, only if no write has carried
        that ledger row yet (a sibling call's group commit may have). A failed write that went
        behind is raised here, unless `raise_behind=False` (its records are pending again)."""
        async with self.lock:
            self.carry_behind = self._may_carry_behind()
            await self._settle_behind(raise_behind)
            if needed is not None and not any(e is needed for e in self.effects):
                return
            prepared = self._prepare(ctx, durable=durable, finish=finish)
            if prepared is not None:
                await self._commit(*prepared, waited=True)

    def write_behind(self, ctx: Any, *, durable: bool = False) -> None:
        """Prepare a write now and commit it while the run goes on (not in a durable run: see
        `_durable_io`)."""
        if self.lock.locked() or self.behind is not None or DURABLE_IO.get() is not None:
            return  # a write is under way, or the run is durable: what is pending rides with the next one
        prepared = self._prepare(ctx, durable=durable, finish=None)
        if prepared is not None:
            self.behind_snapshot, self.behind_started, self.carry_behind = prepared[1].snapshot, False, False
            self.behind = asyncio.ensure_future(self._commit(*prepared, waited=False))

    def _may_carry_behind(self) -> bool:
        """Whether the write about to be made may carry the write behind, which has not gone to
        the store yet (a model that answered at once): one transaction instead of two. A crash
        leaves the store as if the write behind had not committed yet, which it may anyway; the
        only record lost is the snapshot it carried, so it is carried only when the new write's
        snapshot takes that one's place: a settled one, or any when it carried none (a snapshot
        marks where it was taken, so one carried further would mark the wrong place)."""
        if self.behind is None or self.behind.done() or self.behind_started or self.snapshot is None:
            return False
        return self.snapshot == 'complete' or self.behind_snapshot is None

    async def _settle_behind(self, raise_error: bool) -> None:
        behind, self.behind = self.behind, None
        if behind is None:
            return
        try:
            await behind
        except _Carried:
            pass  # what it held is pending again, for the write about to be made
        except Exception:
            if raise_error:
                raise
        finally:
            self.carry_behind = False

    def _prepare(self, ctx: Any, *, durable: bool, finish: RunFinish | None) -> tuple[StepWrite, _Undo] | None:
        """Take what is pending into one `StepWrite` (None when only events are pending: they
        wait for the next write); the log advances as if it were written."""
        history: list[ModelMessage] = ctx.messages
        unchanged = len(history) >= self.stored and (
            self.stored == 0 or (history[0] is self.first and history[self.stored - 1] is self.last)
        )
        new = history[self.stored :] if unchanged else []
        rewritten = None if unchanged else list(history)
        if rewritten is not None and DURABLE_IO.get() is not None:
            raise UserError(
                'a durable run cannot store a rewritten history yet (ProcessHistory or compaction changed '
                'earlier messages): a replay after a crash could not start from the history its first attempt '
                'did; rewrite the history before the workflow, or leave StepPersistence off this agent'
            )
        if self.registered and not (new or rewritten or self.effects or self.snapshot or finish):
            return None
        undo = _Undo(
            self.stored,
            self.first,
            self.last,
            self.events,
            self.effects,
            self.snapshot,
            self.registered,
            self.snapshot_index,
        )
        mark = None
        if self.snapshot is not None:
            key = f'{self.snapshot_index}:{ctx.run_step}:{self.snapshot}'
            mark = SnapshotMark(self.snapshot, ctx.run_step, key)
            self.snapshot_index += 1
        write = StepWrite(
            self.conversation_id,
            self.scope,
            ctx.run_id,
            self.revision,
            messages=new,
            history=rewritten,
            events=self.events,
            snapshot=mark,
            effects=self.effects,
            register=not self.registered,
            lineage=None if self.registered else self.lineage,
            finish=finish,
            durable=durable,
        )
        self.events, self.effects, self.snapshot, self.registered = [], [], None, True
        if history:
            self.pin(history, len(history))
        return write, undo

    async def _commit(self, write: StepWrite, undo: _Undo, *, waited: bool) -> None:
        """Commit `write`: in the event loop if the store can start it at once and it is bounded
        by one step (no rewritten history) and either the run waits for it or it does not wait
        for the disk; else in a worker thread. (A synced write that goes behind stays in a
        thread: the loop is never held for a sync the run is not waiting for.)"""
        try:
            io = DURABLE_IO.get()
            if io is not None:  # a durable run: the write is one of the engine's steps
                revision = await io('step_write', partial(write_once, self.store.sync), write)
            elif write.history is None and (waited or not write.durable):
                if not waited:
                    await asyncio.sleep(0)  # let the model request it goes behind start first
                    if self.carry_behind:
                        raise _Carried
                    self.behind_started = True
                revision = await self.store._in_loop_or_thread(self.store.sync.step_write, write)
            else:
                if not waited:
                    self.behind_started = True
                revision = await self.store.step_write(write)
        except BaseException:
            # Nothing was written: what it carried is pending again, ahead of what came since.
            self.stored, self.first, self.last = undo.stored, undo.first, undo.last
            self.events, self.effects = undo.events + self.events, undo.effects + self.effects
            self.snapshot = self.snapshot or undo.snapshot
            self.registered, self.snapshot_index = undo.registered, undo.snapshot_index
            raise
        self.revision = revision


class _Carried(Exception):
    """A write behind stood down: the next write carries what it held."""
