"""`HarnessStepStore`: pydantic-ai-harness's `StepStore` protocol over a Threadline store (extra
`harness`), so a harness user keeps the harness's `StepPersistence` and gets Threadline's log.

The harness hands every snapshot over as the whole history (a deep copy). Stored as it comes,
that makes a database grow with history times turns; here a snapshot becomes a position in the
conversation's log instead:

- the snapshot's messages are compared with what the log holds (pydantic-ai's own equality,
  message by message, against the last snapshot this store wrote for the conversation, or the
  stored history read once when it has none); the messages past the log's tip are appended and
  the snapshot marks the new tip, in one transaction;
- the request the harness folds in after a tool cycle (the tool results, not sent yet, so not
  yet stamped by pydantic-ai) is kept with the snapshot (`SnapshotMark.pending`), not in the
  log: the log takes it once, as sent, from the next snapshot;
- a snapshot that does not extend the log (a history processor trimmed it, or a run resumed from
  an earlier snapshot) is stored as a branch from where the two part, sharing the prefix: the old
  branch and its snapshots stay readable;
- every write names the revision it extends: another writer of the conversation in between is a
  conflict, and the comparison is made again against the history as it now stands;
- `latest_snapshot` reads the history at the snapshot's position, as pydantic-ai messages.

Rules:
- every operation works in the one `scope` the store was made with: a run or conversation of
  another scope is not found, whatever id the caller gives;
- a run belongs to the conversation it registered in (`RunRecord.conversation_id`, or a
  conversation named by its run id when it has none) for good;
- records keep the harness's idempotency keys: a retried event or snapshot is stored once;
- an event's `conversation_id`, `parent_run_id`, `agent_name` and `metadata` are its run's (the
  harness's `StepPersistence` gives every event of a run the same ones);
- a tool call left `started` is an unknown effect in Threadline's ledger too: Threadline's own
  `Agent`, its pydantic-ai `StepPersistence` and the audit refuse the conversation until it is
  reconciled (`threadline.audit.reconcile_tool_call`); the harness's own capability does not.

The comparison costs one equality check per message per snapshot, less than the deep copy the
harness makes of the same history first; what is written costs what the snapshot added.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from pydantic_ai.messages import ModelMessage, ModelRequest
from pydantic_ai_harness.step_persistence import (
    ContinuableSnapshot,
    RunRecord,
    StepEvent,
    ToolEffectRecord,
)

from threadline._public import publish
from threadline.exceptions import ConflictError, ConversationNotFound, UserError
from threadline.pydantic_ai._bridge import from_pydantic_ai, to_pydantic_ai
from threadline.storage import AsyncStore, RunLineage, SnapshotMark, StepWrite, SyncStore
from threadline.storage import RunRecord as StoredRun
from threadline.storage import StepEvent as StoredEvent
from threadline.storage import ToolEffect as StoredEffect

__all__ = ['HarnessStepStore']

KEPT_HISTORIES = 16
"""Conversations whose last written snapshot a store keeps to compare the next one against."""
KEPT_RUNS = 4096
"""Runs whose conversation a store remembers (a forgotten one is read back from the store)."""
_ATTEMPTS = 5


@dataclass
class _Tip:
    """The stored history of a conversation as this store last wrote or read it."""

    revision: int | None
    messages: list[ModelMessage]


class HarnessStepStore:
    """pydantic-ai-harness's `StepStore` over a Threadline store, in one scope (see the module
    docstring): `StepPersistence(store=HarnessStepStore(SQLiteStore(path), scope='me'))`."""

    def __init__(self, store: AsyncStore[SyncStore], *, scope: str) -> None:
        if not isinstance(scope, str) or not scope:
            raise UserError(f'HarnessStepStore needs a non-empty scope, not {scope!r}')
        self.store, self.scope = store, scope
        self._tips: OrderedDict[str, _Tip] = OrderedDict()
        self._conversations: dict[str, str] = {}

    def __repr__(self) -> str:
        return f'HarnessStepStore({self.store!r}, scope={self.scope!r})'

    # -- runs ---------------------------------------------------------------------------------
    async def register_run(self, record: RunRecord) -> None:
        conversation_id = record.conversation_id or record.run_id
        lineage = RunLineage(record.parent_run_id, record.agent_name, dict(record.metadata), record.registration_id)
        write = StepWrite(conversation_id, self.scope, record.run_id, None, register=True, lineage=lineage)
        await self.store.step_write(write)
        self._remember(record.run_id, conversation_id)

    async def get_run(self, *, run_id: str) -> RunRecord | None:
        stored = await self.store.get_run(run_id, scope=self.scope)
        return None if stored is None else _run(stored)

    async def list_runs(
        self, *, parent_run_id: str | None = None, conversation_id: str | None = None
    ) -> list[RunRecord]:
        found = await self.store.find_runs(
            scope=self.scope, parent_run_id=parent_run_id, conversation_id=conversation_id
        )
        return [_run(r) for r in found]

    async def _conversation_of(self, run_id: str, given: str | None) -> str:
        """The conversation the run belongs to (a run never registered goes to `given`)."""
        known = self._conversations.get(run_id)
        if known is None:
            stored = await self.store.get_run(run_id, scope=self.scope)
            known = stored.conversation_id if stored is not None else given or run_id
            self._remember(run_id, known)
        return known

    def _remember(self, run_id: str, conversation_id: str) -> None:
        """Keep which conversation a run writes to (the newest `KEPT_RUNS` runs: bounded memory)."""
        self._conversations[run_id] = conversation_id
        if len(self._conversations) > KEPT_RUNS:
            del self._conversations[next(iter(self._conversations))]

    # -- events -------------------------------------------------------------------------------
    async def append_event(self, event: StepEvent) -> None:
        conversation_id = await self._conversation_of(event.run_id, event.conversation_id)
        stored = StoredEvent(
            event.run_id,
            event.kind,
            event.step_index,
            event.timestamp,
            event.tool_call_id,
            event.tool_name,
            event.error,
            event.idempotency_key,
        )
        await self.store.step_write(StepWrite(conversation_id, self.scope, event.run_id, None, events=[stored]))

    async def list_events(self, *, run_id: str) -> list[StepEvent]:
        run = await self.store.get_run(run_id, scope=self.scope)
        if run is None:
            return []
        return [
            StepEvent(
                run_id=e.run_id,
                kind=e.kind,
                step_index=e.step_index,
                timestamp=e.timestamp,
                conversation_id=run.conversation_id,
                parent_run_id=run.parent_run_id,
                agent_name=run.agent_name,
                tool_call_id=e.tool_call_id,
                tool_name=e.tool_name,
                error=e.error,
                metadata=dict(run.metadata),
                idempotency_key=e.idempotency_key,
            )
            for e in await self.store.list_events(run_id, scope=self.scope)
        ]

    # -- snapshots ----------------------------------------------------------------------------
    async def save_snapshot(self, snapshot: ContinuableSnapshot) -> None:
        conversation_id = await self._conversation_of(snapshot.run_id, snapshot.conversation_id)
        messages = list(snapshot.messages)
        sent, pending = _unsent_tail(messages)
        mark = SnapshotMark(
            snapshot.state, snapshot.step_index, snapshot.idempotency_key, pending=from_pydantic_ai(pending)
        )
        for attempt in range(_ATTEMPTS):
            tip = await self._tip(conversation_id, fresh=attempt > 0)
            shared = _shared_prefix(tip.messages, sent)
            if shared == len(tip.messages):
                appended = from_pydantic_ai(sent[shared:])
                write = StepWrite(
                    conversation_id, self.scope, snapshot.run_id, tip.revision, messages=appended, snapshot=mark
                )
            else:  # the store shares the common prefix and branches from where they part
                history = from_pydantic_ai(sent)
                write = StepWrite(
                    conversation_id, self.scope, snapshot.run_id, tip.revision, history=history, snapshot=mark
                )
            try:
                revision = await self.store.step_write(write)
            except ConflictError:
                continue  # another writer moved the conversation on: compare again with its history
            self._keep(conversation_id, _Tip(revision, sent))
            return
        raise ConflictError(
            f'the snapshot of run {snapshot.run_id!r} lost {_ATTEMPTS} races for conversation {conversation_id!r}'
        )

    async def _tip(self, conversation_id: str, *, fresh: bool) -> _Tip:
        """What the log holds now: the last snapshot written here, else the stored history."""
        tip = None if fresh else self._tips.get(conversation_id)
        if tip is not None:
            self._tips.move_to_end(conversation_id)
            return tip
        try:
            stored = await self.store.load(conversation_id, scope=self.scope)
        except ConversationNotFound:
            return _Tip(None, [])
        tip = _Tip(stored.revision, to_pydantic_ai(stored.messages))
        self._keep(conversation_id, tip)
        return tip

    def _keep(self, conversation_id: str, tip: _Tip) -> None:
        kept = self._tips.get(conversation_id)
        if kept is not None and kept.revision is not None and tip.revision is not None and kept.revision > tip.revision:
            return  # a later write of this store already recorded a newer tip
        self._tips[conversation_id] = tip
        self._tips.move_to_end(conversation_id)
        while len(self._tips) > KEPT_HISTORIES:
            self._tips.popitem(last=False)

    async def latest_snapshot(self, *, run_id: str, include_interrupted: bool = False) -> ContinuableSnapshot | None:
        run = await self.store.get_run(run_id, scope=self.scope)
        if run is None:
            return None
        snapshots = await self.store.list_snapshots(run_id, scope=self.scope)
        kept = [s for s in snapshots if include_interrupted or s.state == 'complete']
        if not kept:
            return None
        latest = kept[-1]
        history = await self.store.load_at(
            latest.conversation_id, scope=self.scope, branch_id=latest.branch_id, position=latest.position
        )
        return ContinuableSnapshot(
            run_id=run_id,
            step_index=latest.step_index,
            messages=to_pydantic_ai([*history, *latest.pending]),
            conversation_id=latest.conversation_id,
            parent_run_id=run.parent_run_id,
            agent_name=run.agent_name,
            timestamp=latest.timestamp,
            state=latest.state,
        )

    # -- the tool-effect ledger ---------------------------------------------------------------
    async def record_tool_effect(self, record: ToolEffectRecord) -> None:
        conversation_id = await self._conversation_of(record.run_id, None)
        effect = StoredEffect(
            record.run_id,
            record.tool_call_id,
            record.tool_name,
            record.status,
            record.started_at,
            record.ended_at,
            record.idempotency_key,
            record.effect_summary,
        )
        await self.store.step_write(StepWrite(conversation_id, self.scope, record.run_id, None, effects=[effect]))

    async def get_tool_effect(self, *, run_id: str, tool_call_id: str) -> ToolEffectRecord | None:
        effects = await self.store.tool_effects(run_id, scope=self.scope)
        return next((_effect(e) for e in effects if e.tool_call_id == tool_call_id), None)

    async def list_unresolved_tool_effects(self, *, run_id: str) -> list[ToolEffectRecord]:
        effects = await self.store.tool_effects(run_id, scope=self.scope)
        return [_effect(e) for e in effects if e.status == 'started']


def _unsent_tail(messages: list[ModelMessage]) -> tuple[list[ModelMessage], list[ModelMessage]]:
    """The history as sent, and the request pydantic-ai built and has not sent (no timestamp
    yet: it stamps a request, with its run and conversation, as it sends it). The harness folds
    that request, holding the tool results, into the snapshot after a tool cycle."""
    if messages and isinstance(messages[-1], ModelRequest) and messages[-1].timestamp is None:
        return messages[:-1], messages[-1:]
    return messages, []


def _shared_prefix(stored: list[ModelMessage], given: list[ModelMessage]) -> int:
    """How many leading messages the two histories have in common (pydantic-ai's equality)."""
    count = 0
    for ours, theirs in zip(stored, given, strict=False):
        if ours is not theirs and ours != theirs:
            break
        count += 1
    return count


def _run(run: StoredRun) -> RunRecord:
    return RunRecord(
        run_id=run.run_id,
        conversation_id=run.conversation_id,
        parent_run_id=run.parent_run_id,
        agent_name=run.agent_name,
        metadata=dict(run.metadata),
        started_at=run.started_at,
        registration_id=run.registration_id,
    )


def _effect(effect: StoredEffect) -> ToolEffectRecord:
    return ToolEffectRecord(
        tool_call_id=effect.tool_call_id,
        tool_name=effect.tool_name,
        run_id=effect.run_id,
        status=effect.status,
        started_at=effect.started_at,
        ended_at=effect.ended_at,
        idempotency_key=effect.idempotency_key,
        effect_summary=effect.summary,
    )


publish('threadline.pydantic_ai', globals(), __all__)  # loaded on first use, through the package
