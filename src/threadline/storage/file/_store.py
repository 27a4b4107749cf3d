"""`FileStore`: append-only JSON lines, one file per conversation, no database.

Every change to a conversation is one JSON line appended to its file and fsynced before the call
returns: a batch of messages, a new branch, a run record, an event, a snapshot, a ledger row. A
line is the unit of atomicity: a process killed mid-write leaves a torn last line, which readers
ignore and the next writer cuts off. Writers take an exclusive `flock` on the file, so concurrent
processes serialize. Search scans the files of the scope (fine for a laptop's worth of history;
use SQLite or PostgreSQL past that). Good for greppable, diffable, rsync-able history.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from threadline.messages import ModelMessage
from threadline.storage._face import AsyncStore
from threadline.storage._neutral import check_scope, check_step_write, not_found, now_text, run_not_found
from threadline.storage._records import (
    AuditEvent,
    EveryScope,
    OutcomeReceipt,
    ReceiptStrength,
    RunFinish,
    RunRecord,
    Snapshot,
    SnapshotRequest,
    StepEvent,
    StepWrite,
    ToolEffect,
    WaitRecord,
    check_strength,
)
from threadline.storage._validate import validated
from threadline.storage.file._convert import (
    audit_event_line,
    effect_line,
    event_line,
    finish_line,
    lineage_line,
    snapshot_line,
    to_audit_event,
    to_effect,
    to_event,
    to_outcome,
    to_snapshot,
    to_wait,
)
from threadline.storage.file._leases import FileLeases
from threadline.storage.file._log import FileLogOps
from threadline.storage.file._notebooks import FileNotebooks
from threadline.storage.file._records import (
    REV,
    BranchLine,
    FileRecord,
    OutcomeLine,
    QuarantineLine,
    RunLine,
    WaitLine,
    WaitResolvedLine,
)
from threadline.storage.file._state import ConvState
from threadline.trust.sealing import StoreSeal

__all__ = ['FileBackend', 'FileStore']


@validated
class FileBackend(FileLogOps, FileNotebooks, FileLeases):
    """The synchronous store over a directory of JSON-lines files (what `FileStore(...).sync` is)."""

    def prune(
        self, *, older_than: datetime | None = None, keep_last: int | None = None, scope: str | EveryScope
    ) -> list[str]:
        """The log's prune, then (with `older_than`) the scope's notebooks not written since."""
        pruned = super().prune(older_than=older_than, keep_last=keep_last, scope=scope)
        if older_than is not None:
            self._prune_notebooks(older_than, scope if isinstance(scope, str) else None)
        return pruned

    # -- step store ---------------------------------------------------------------------------
    def step_write(self, write: StepWrite) -> int:
        check_step_write(write)
        conversation_id, run_id, snapshot, finish = write.conversation_id, write.run_id, write.snapshot, write.finish
        history, messages, provenance = write.history, write.messages, write.provenance
        with self._locked(conversation_id) as path:
            state, records = self._open(
                path,
                conversation_id,
                write.scope,
                write.expected_revision,
                create=True,
                changes_history=write.changes_history,
            )
            bumps = bool(records)
            self._claim_run(run_id, conversation_id)
            if write.register or run_id not in state.runs:
                records.append(RunLine(run_id=run_id, started_at=now_text()))
            if write.lineage is not None:
                records.append(lineage_line(run_id, write.lineage))
            length = self._length(state)
            if history is not None:
                changed = self._replace_records(state, list(history), provenance, run_id)
                records += changed
                bumps = bumps or bool(changed)
                length = len(history)
            elif messages:
                records.append(self._batch(state, state.head, length, messages, provenance, run_id, state.chain_head))
                length += len(messages)
                bumps = True
            records += self._new_events(state, write.events)
            if snapshot is not None and not state.seen(state.snapshots, run_id, snapshot.idempotency_key):
                head = next((r.id for r in records if isinstance(r, BranchLine)), state.head)
                records.append(snapshot_line(run_id, head, length, snapshot))
            records += [effect_line(e) for e in write.effects]
            if finish is not None:
                records.append(finish_line(finish, with_usage=True))
                bumps = bumps or (finish.status == 'completed' and finish.usage is not None)
            if bumps:
                records.append(REV)
            if records:
                self._append_lines(path, records, durable=write.durable)
            return state.revision + (1 if bumps else 0)

    @staticmethod
    def _new_events(state: ConvState, events: Sequence[StepEvent]) -> list[FileRecord]:
        """The events not stored yet: a key seen before, in the file or earlier in this write,
        is a retried append."""
        keys = set()
        lines: list[FileRecord] = []
        for event in events:
            key = event.idempotency_key
            if key is not None and (key in keys or state.seen(state.events, event.run_id, key)):
                continue
            if key is not None:
                keys.add(key)
            lines.append(event_line(event))
        return lines

    def conversation_state(self, conversation_id: str, *, scope: str) -> tuple[int, int] | None:
        check_scope(scope)
        state = self._state(conversation_id)
        if state is None or state.scope != scope:
            return None
        return state.revision, self._length(state)

    def load_at(self, conversation_id: str, *, scope: str, branch_id: int, position: int) -> list[ModelMessage]:
        state = self._get(conversation_id, scope)
        if branch_id not in state.branches:  # a guessed branch id of another conversation
            raise not_found(conversation_id)
        return self._decode(self._bodies(state, 0, position, branch_id), conversation_id)

    def record_tool_effect(self, effect: ToolEffect, *, conversation_id: str, scope: str) -> None:
        with self._locked(conversation_id) as path:
            self._get(conversation_id, scope)  # a row for a conversation that does not exist would orphan it
            self._claim_run(effect.run_id, conversation_id)
            self._append_lines(path, [effect_line(effect)])

    def get_run(self, run_id: str, *, scope: str) -> RunRecord | None:
        state = self._run_state(run_id, scope)
        run = state.runs.get(run_id) if state else None
        return run.record(run_id, state.id) if state and run else None

    def list_runs(self, conversation_id: str, *, scope: str) -> list[RunRecord]:
        state = self._get(conversation_id, scope)
        runs = (run.record(run_id, state.id) for run_id, run in state.runs.items())
        return sorted(runs, key=lambda r: (r.started_at, r.run_id))

    def find_runs(
        self, *, scope: str, parent_run_id: str | None = None, conversation_id: str | None = None
    ) -> list[RunRecord]:
        """Read from the conversation files (every file of the store without `conversation_id`,
        as `list` reads them): a FileStore is for one machine's worth of conversations."""
        check_scope(scope)
        if conversation_id is not None:
            state = self._state(conversation_id)
            states = [state] if state is not None else []
        else:
            states = self._all_states()
        runs = [
            run.record(run_id, state.id)
            for state in states
            if state.scope == scope
            for run_id, run in state.runs.items()
            if parent_run_id is None or (run.lineage is not None and run.lineage.parent_run_id == parent_run_id)
        ]
        return sorted(runs, key=lambda r: (r.started_at, r.run_id))

    def list_events(self, run_id: str, *, scope: str) -> list[StepEvent]:
        state = self._run_state(run_id, scope)
        return [to_event(e) for e in state.events if e.run_id == run_id] if state else []

    def list_snapshots(self, run_id: str, *, scope: str) -> list[Snapshot]:
        state = self._run_state(run_id, scope)
        if state is None:
            return []
        return [
            to_snapshot(state.id, s, tuple(self._decode(list(enumerate(s.pending)), state.id)))
            for s in state.snapshots
            if s.run_id == run_id
        ]

    def tool_effects(self, run_id: str, *, scope: str) -> list[ToolEffect]:
        state = self._run_state(run_id, scope)
        return [to_effect(e) for (r, _), e in state.effects.items() if r == run_id] if state else []

    # -- audit records ------------------------------------------------------------------------
    def audit_key(self) -> bytes:
        """`THREADLINE_AUDIT_KEY`, else a key derived from the store key (kept outside the files)."""
        configured = os.environ.get('THREADLINE_AUDIT_KEY')
        return configured.encode() if configured else self.seal.derived_key('audit')

    def _add(self, conversation_id: str, scope: str, record: FileRecord) -> None:
        with self._locked(conversation_id) as path:
            self._get(conversation_id, scope)
            self._append_lines(path, [record])

    def record_outcome(
        self,
        conversation_id: str,
        *,
        scope: str,
        run_id: str | None,
        expected_effect: str,
        destination: str | None = None,
        idempotency_key: str | None = None,
        observed_revision: str | None = None,
        evidence_ref: str | None = None,
        strength: ReceiptStrength = 'outcome',
        observed_at: datetime | None = None,
    ) -> OutcomeReceipt:
        check_strength(strength)
        line = OutcomeLine(
            conversation_id=conversation_id,
            run_id=run_id,
            expected_effect=expected_effect,
            destination=destination,
            idempotency_key=idempotency_key,
            observed_revision=observed_revision,
            evidence_ref=evidence_ref,
            strength=strength,
            observed_at=observed_at or datetime.now(tz=UTC),
        )
        self._add(conversation_id, scope, line)
        return to_outcome(line)

    def outcomes(self, conversation_id: str, *, scope: str) -> list[OutcomeReceipt]:
        return [to_outcome(line) for line in self._get(conversation_id, scope).outcomes]

    def record_wait(
        self,
        conversation_id: str,
        *,
        scope: str,
        run_id: str | None,
        owner: str,
        decision: str,
        deadline: datetime,
        resume_token: str,
    ) -> WaitRecord:
        line = WaitLine(
            conversation_id=conversation_id,
            run_id=run_id,
            owner=owner,
            decision=decision,
            deadline=deadline,
            resume_token=resume_token,
            created_at=datetime.now(tz=UTC),
        )
        self._add(conversation_id, scope, line)
        return to_wait(line, None)

    def resolve_wait(self, conversation_id: str, *, scope: str, resume_token: str) -> None:
        self._add(conversation_id, scope, WaitResolvedLine(resume_token=resume_token, at=now_text()))

    def waits(self, conversation_id: str, *, scope: str) -> list[WaitRecord]:
        state = self._get(conversation_id, scope)
        return [to_wait(line, state.resolved.get(line.resume_token)) for line in state.waits]

    def record_audit_events(self, conversation_id: str, events: Sequence[AuditEvent], *, scope: str) -> None:
        if events:
            with self._locked(conversation_id) as path:
                self._get(conversation_id, scope)
                self._append_lines(path, [audit_event_line(e) for e in events])

    def audit_events(self, conversation_id: str, *, scope: str) -> list[AuditEvent]:
        return [to_audit_event(line) for line in self._get(conversation_id, scope).audit_events]

    def quarantine(self, conversation_id: str, *, scope: str, report: dict[str, Any] | None) -> None:
        self._add(conversation_id, scope, QuarantineLine(report=report))

    def finish_run(self, finish: RunFinish, *, scope: str) -> None:
        state = self._run_state(finish.run_id, scope)
        if state is None:
            raise run_not_found(finish.run_id)
        with self._locked(state.id) as path:
            self._append_lines(path, [finish_line(finish, with_usage=False)])

    def register_run(self, run_id: str, *, conversation_id: str, scope: str, model_name: str | None = None) -> None:
        with self._locked(conversation_id) as path:
            self._get(conversation_id, scope)
            self._claim_run(run_id, conversation_id)
            self._append_lines(path, [RunLine(run_id=run_id, started_at=now_text(), model_name=model_name)])

    def append_event(self, event: StepEvent, *, conversation_id: str, scope: str) -> None:
        with self._locked(conversation_id) as path:
            self._get(conversation_id, scope)
            self._claim_run(event.run_id, conversation_id)
            self._append_lines(path, [event_line(event)])

    def save_snapshot(self, request: SnapshotRequest) -> Snapshot:
        with self._locked(request.conversation_id) as path:
            state = self._get(request.conversation_id, request.scope)
            self._claim_run(request.run_id, request.conversation_id)
            record = snapshot_line(request.run_id, state.head, self._length(state), request.mark)
            self._append_lines(path, [record])
        return to_snapshot(request.conversation_id, record, tuple(request.mark.pending))


class FileStore(AsyncStore[FileBackend]):
    """Conversations as append-only JSON-lines files under `directory`; `store.sync` is the same
    store, synchronous. `seal` is the key and tip book that seal its writes (default:
    `StoreSeal.from_environment()`)."""

    def __init__(self, directory: str | os.PathLike[str], *, seal: StoreSeal | None = None) -> None:
        super().__init__(FileBackend(directory, seal))
        self.root = self.sync.root

    def __repr__(self) -> str:
        return f'FileStore({str(self.root)!r})'
