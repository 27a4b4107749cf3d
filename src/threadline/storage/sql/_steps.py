"""Step persistence tables on SQL: run records, the event log, snapshots and the tool-effect ledger."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import msgspec

from threadline.exceptions import ConversationNotFound
from threadline.messages import ModelMessage, RunUsage
from threadline.messages.wire import encode_each
from threadline.storage._neutral import check_scope, check_step_write, not_found, now_text, parse_time, run_not_found
from threadline.storage._records import (
    RunFinish,
    RunLineage,
    RunRecord,
    RunStart,
    Snapshot,
    SnapshotMark,
    SnapshotRequest,
    StepEvent,
    StepWrite,
    ToolEffect,
)
from threadline.storage.sql._base import Conversation, SQLBase
from threadline.storage.sql._dialect import Connection

__all__ = ['StepOps']


class StepOps(SQLBase):
    """The step half of the contract. Every write is idempotent under retry: a repeated
    `(run_id, idempotency_key)` is dropped. A boundary's messages, events, snapshot and ledger row
    go in one transaction (`step_write`): one commit, and all or nothing on a crash.

    Tenancy: a run belongs to one conversation, and so to one scope, for good (`_claim_run`). Every
    read takes the scope and sees only runs of that scope's conversations; a write naming a run of
    another conversation is refused as `RunNotFound`, exactly like a run that does not exist.
    """

    def register_run(self, run_id: str, *, conversation_id: str, scope: str, model_name: str | None = None) -> None:
        with self._write() as conn:
            self._conversation(conn, conversation_id, scope)
            self._claim_run(conn, run_id, conversation_id, model_name)

    def finish_run(self, finish: RunFinish, *, scope: str) -> None:
        with self._write() as conn:
            if self._run_in_scope(conn, finish.run_id, scope) is None:
                raise run_not_found(finish.run_id)
            self._close_run(conn, finish)

    def _run_in_scope(self, conn: Connection, run_id: str, scope: str) -> str | None:
        """The run's conversation, when the run is recorded in one of `scope`'s conversations."""
        check_scope(scope)
        row = self._one(
            conn,
            'SELECT r.conversation_id FROM runs r JOIN conversations c ON c.id = r.conversation_id '
            'WHERE r.run_id = ? AND c.scope = ?',
            (run_id, scope),
        )
        return None if row is None else str(row[0])

    def _close_run(self, conn: Connection, finish: RunFinish) -> None:
        usage = msgspec.json.encode(finish.usage).decode() if finish.usage else None
        self._exec(
            conn,
            'UPDATE runs SET status = ?, finished_at = ?, output = COALESCE(?, output), usage = COALESCE(?, usage) '
            'WHERE run_id = ?',
            (finish.status, now_text(), finish.output_json, usage, finish.run_id),
        )

    def get_run(self, run_id: str, *, scope: str) -> RunRecord | None:
        with self._read() as conn:
            check_scope(scope)
            row = self._one(conn, _RUNS + 'WHERE r.run_id = ? AND c.scope = ?', (run_id, scope))
        return _run(row) if row else None

    def list_runs(self, conversation_id: str, *, scope: str) -> list[RunRecord]:
        with self._read() as conn:
            self._conversation(conn, conversation_id, scope)
            rows = self._all(
                conn, _RUNS + 'WHERE r.conversation_id = ? ORDER BY r.started_at, r.run_id', (conversation_id,)
            )
        return [_run(r) for r in rows]

    def find_runs(
        self, *, scope: str, parent_run_id: str | None = None, conversation_id: str | None = None
    ) -> list[RunRecord]:
        where, params = 'WHERE c.scope = ?', [scope]
        if parent_run_id is not None:
            where, params = where + ' AND r.parent_run_id = ?', [*params, parent_run_id]
        if conversation_id is not None:
            where, params = where + ' AND r.conversation_id = ?', [*params, conversation_id]
        with self._read() as conn:
            check_scope(scope)
            rows = self._all(conn, _RUNS + where + ' ORDER BY r.started_at, r.run_id', params)
        return [_run(r) for r in rows]

    def _record_lineage(self, conn: Connection, run_id: str, lineage: RunLineage) -> None:
        metadata = json.dumps(dict(lineage.metadata), ensure_ascii=False) if lineage.metadata else None
        self._exec(
            conn,
            'UPDATE runs SET parent_run_id = ?, agent_name = ?, metadata = ?, registration_id = ? WHERE run_id = ?',
            (lineage.parent_run_id, lineage.agent_name, metadata, lineage.registration_id, run_id),
        )

    def append_event(self, event: StepEvent, *, conversation_id: str, scope: str) -> None:
        with self._write() as conn:
            self._conversation(conn, conversation_id, scope)
            self._claim_run(conn, event.run_id, conversation_id)
            self._insert_events(conn, [event], conversation_id)

    def _insert_events(self, conn: Connection, events: Sequence[StepEvent], conversation_id: str) -> None:
        """Record events in one statement call; a replayed one (same idempotency key) is ignored."""
        if not events:
            return
        conn.cursor().executemany(
            self._dialect.q(
                'INSERT INTO events (run_id, conversation_id, kind, step_index, tool_call_id, tool_name, error, '
                'idempotency_key, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING'
            ),
            [
                (
                    event.run_id,
                    conversation_id,
                    event.kind,
                    event.step_index,
                    event.tool_call_id,
                    event.tool_name,
                    event.error,
                    event.idempotency_key,
                    event.timestamp.isoformat(),
                )
                for event in events
            ],
        )

    def list_events(self, run_id: str, *, scope: str) -> list[StepEvent]:
        with self._read() as conn:
            check_scope(scope)
            rows = self._all(
                conn,
                'SELECT e.run_id, e.kind, e.step_index, e.timestamp, e.tool_call_id, e.tool_name, e.error, '
                'e.idempotency_key FROM events e JOIN conversations c ON c.id = e.conversation_id '
                'WHERE e.run_id = ? AND c.scope = ? ORDER BY e.id',
                (run_id, scope),
            )
        return [StepEvent(r[0], r[1], r[2], parse_time(r[3]), r[4], r[5], r[6], r[7]) for r in rows]

    def save_snapshot(self, request: SnapshotRequest) -> Snapshot:
        with self._write() as conn:
            self._conversation(conn, request.conversation_id, request.scope)
            self._claim_run(conn, request.run_id, request.conversation_id)
            return self._snapshot(conn, request.run_id, request.conversation_id, request.scope, request.mark)

    def _snapshot(
        self,
        conn: Connection,
        run_id: str,
        conversation_id: str,
        scope: str,
        mark: SnapshotMark,
        *,
        at: tuple[int, int] | None = None,
    ) -> Snapshot:
        """Record a snapshot at the head's tip; `at` is (head branch, length) when the caller,
        holding the write lock, already knows them."""
        if at is None:
            conversation = self._conversation(conn, conversation_id, scope)
            at = (conversation.head_branch, conversation.length)
        branch, length = at
        stamp = now_text()
        pending = b'[' + b','.join(encode_each(mark.pending)) + b']' if mark.pending else None
        row = self._one(
            conn,
            'INSERT INTO snapshots (run_id, conversation_id, branch_id, position, state, step_index, '
            'idempotency_key, timestamp, pending) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id',
            (
                run_id,
                conversation_id,
                branch,
                length,
                mark.state,
                mark.step_index,
                mark.idempotency_key,
                stamp,
                None if pending is None else pending.decode(),
            ),
        )
        if row is not None and pending is not None:  # messages outside the log: sealed with the write
            self._touch(conversation_id, ('snapshot', row[0]))
        return Snapshot(
            run_id, conversation_id, length, branch, mark.state, mark.step_index, parse_time(stamp), tuple(mark.pending)
        )

    def list_snapshots(self, run_id: str, *, scope: str) -> list[Snapshot]:
        with self._read() as conn:
            check_scope(scope)
            rows = self._all(
                conn,
                'SELECT s.run_id, s.conversation_id, s.position, s.branch_id, s.state, s.step_index, s.timestamp, '
                's.pending FROM snapshots s JOIN conversations c ON c.id = s.conversation_id '
                'WHERE s.run_id = ? AND c.scope = ? ORDER BY s.id',
                (run_id, scope),
            )
        return [Snapshot(r[0], r[1], r[2], r[3], r[4], r[5], parse_time(r[6]), self._pending(r[7], r[1])) for r in rows]

    def _pending(self, document: str | None, conversation_id: str) -> tuple[ModelMessage, ...]:
        if document is None:
            return ()
        return tuple(self._decode([(0, document[1:-1])], conversation_id))

    def record_tool_effect(self, effect: ToolEffect, *, conversation_id: str, scope: str) -> None:
        """Upsert the ledger row of `(run_id, tool_call_id)`; a later status wins, and an
        idempotency key or summary already recorded is kept unless a new one is given."""
        with self._write() as conn:
            self._conversation(conn, conversation_id, scope)
            self._claim_run(conn, effect.run_id, conversation_id)
            self._upsert_effect(conn, effect, conversation_id)

    def _upsert_effect(self, conn: Connection, effect: ToolEffect, conversation_id: str) -> None:
        self._exec(
            conn,
            'INSERT INTO tool_effects (run_id, tool_call_id, conversation_id, tool_name, status, started_at, '
            'ended_at, idempotency_key, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, tool_call_id) '
            'DO UPDATE SET status = excluded.status, ended_at = excluded.ended_at, '
            'idempotency_key = COALESCE(excluded.idempotency_key, tool_effects.idempotency_key), '
            'summary = COALESCE(excluded.summary, tool_effects.summary)',
            (
                effect.run_id,
                effect.tool_call_id,
                conversation_id,
                effect.tool_name,
                effect.status,
                effect.started_at.isoformat(),
                effect.ended_at.isoformat() if effect.ended_at else None,
                effect.idempotency_key,
                effect.summary,
            ),
        )
        self._touch(conversation_id, ('effect', effect.run_id, effect.tool_call_id))

    def tool_effects(self, run_id: str, *, scope: str) -> list[ToolEffect]:
        with self._read() as conn:
            check_scope(scope)
            rows = self._all(
                conn,
                _EFFECTS + 'WHERE t.run_id = ? AND c.scope = ? ORDER BY t.started_at, t.tool_call_id',
                (run_id, scope),
            )
        return [_effect(r) for r in rows]

    def tool_effects_for_conversation(
        self, conversation_id: str, *, scope: str, status: str | None = None
    ) -> list[ToolEffect]:
        with self._read() as conn:
            self._conversation(conn, conversation_id, scope)
            return self._effects_of(conn, conversation_id, status)

    def _effects_of(self, conn: Connection, conversation_id: str, status: str | None) -> list[ToolEffect]:
        """The conversation's ledger rows, oldest first (with `status`, through its index)."""
        where, params = 'WHERE t.conversation_id = ?', [conversation_id]
        if status is not None:
            where, params = where + ' AND t.status = ?', [*params, status]
        return [_effect(r) for r in self._all(conn, _EFFECTS + where + ' ORDER BY t.started_at', params)]

    def run_start(self, conversation_id: str, *, scope: str) -> RunStart | None:
        """The conversation row, its last message and its unresolved ledger rows, in one read
        transaction: each an index descent, whatever the conversation's length."""
        with self._read() as conn:
            conversation = self._found(conn, conversation_id, scope)
            if conversation is None:
                return None
            tip = None
            if conversation.length:
                segments = self._lineage(conn, conversation.head_branch)
                rows = self._raw_messages(conn, segments, conversation.length - 1, conversation.length)
                tip = self._decode(rows, conversation_id)[0]
            unresolved = self._effects_of(conn, conversation_id, 'started')
        quarantined = json.loads(conversation.quarantine) if conversation.quarantine else None
        return RunStart(conversation.revision, conversation.length, tip, unresolved, quarantined)

    def step_write(self, write: StepWrite) -> int:
        """Apply one boundary (see `StepWrite`); returns the revision after the write. A completed
        run's usage is added to the conversation's total."""
        check_step_write(write)
        finish = write.finish
        # A completed run's usage joins the conversation's total in the same update that appends
        # the write's messages (one revision), or in an update of its own when there are none.
        usage = finish.usage if finish is not None and finish.status == 'completed' else None
        with self._write(durable=write.durable) as conn:
            conversation = self._open_for_write(
                conn,
                write.conversation_id,
                write.scope,
                write.expected_revision,
                create=True,
                changes_history=write.changes_history,
            )
            self._claim_run(conn, write.run_id, write.conversation_id)
            if write.lineage is not None:
                self._record_lineage(conn, write.run_id, write.lineage)
            revision = conversation.revision
            messages = list(write.messages)
            if write.history is not None:
                revision = self._replace_locked(conn, conversation, list(write.history), write.provenance, write.run_id)
                conversation, messages = self._conversation(conn, write.conversation_id, write.scope), []
            if messages or usage is not None:
                revision = self._append_locked(
                    conn,
                    conversation,
                    messages,
                    write.provenance,
                    write.run_id,
                    usage_delta=usage,
                    runs=1 if usage is not None else 0,
                )
            self._insert_events(conn, write.events, write.conversation_id)
            if write.snapshot is not None:
                at = (conversation.head_branch, conversation.length + len(messages))
                self._snapshot(conn, write.run_id, write.conversation_id, write.scope, write.snapshot, at=at)
            for effect in write.effects:
                self._upsert_effect(conn, effect, write.conversation_id)
            if finish is not None:
                self._close_run(conn, finish)
            return revision

    def conversation_state(self, conversation_id: str, *, scope: str) -> tuple[int, int] | None:
        """(revision, length) of a conversation, or None if it does not exist in this scope."""
        with self._read() as conn:
            conversation = self._found(conn, conversation_id, scope)
        return None if conversation is None else (conversation.revision, conversation.length)

    def _found(self, conn: Connection, conversation_id: str, scope: str) -> Conversation | None:
        """The conversation, or None when it does not exist in this scope."""
        try:
            return self._conversation(conn, conversation_id, scope)
        except ConversationNotFound:
            return None

    def load_at(self, conversation_id: str, *, scope: str, branch_id: int, position: int) -> list[ModelMessage]:
        """The history of `branch_id`'s lineage up to `position` (what a snapshot points at)."""
        with self._read() as conn:
            conversation = self._conversation(conn, conversation_id, scope)
            owner = self._one(conn, 'SELECT conversation_id FROM branches WHERE id = ?', (branch_id,))
            if owner is None or owner[0] != conversation.id:  # a guessed branch id of another conversation
                raise not_found(conversation_id)
            segments = self._lineage(conn, branch_id)
            rows = self._raw_messages(conn, segments, 0, position)
        return self._decode(rows, conversation_id)


def _run(row: tuple[Any, ...]) -> RunRecord:
    usage = msgspec.json.decode(row[6], type=RunUsage) if row[6] else None
    metadata: dict[str, str] = json.loads(row[10]) if row[10] else {}
    finished = parse_time(row[3]) if row[3] else None
    return RunRecord(
        row[0], row[1], parse_time(row[2]), finished, row[4], row[5], usage, row[7], row[8], row[9], metadata, row[11]
    )


_RUNS = (
    'SELECT r.run_id, r.conversation_id, r.started_at, r.finished_at, r.model_name, r.output, r.usage, r.status, '
    'r.parent_run_id, r.agent_name, r.metadata, r.registration_id '
    'FROM runs r JOIN conversations c ON c.id = r.conversation_id '
)
_EFFECTS = (
    'SELECT t.run_id, t.tool_call_id, t.tool_name, t.status, t.started_at, t.ended_at, t.idempotency_key, t.summary '
    'FROM tool_effects t JOIN conversations c ON c.id = t.conversation_id '
)


def _effect(r: tuple[Any, ...]) -> ToolEffect:
    return ToolEffect(r[0], r[1], r[2], r[3], parse_time(r[4]), parse_time(r[5]) if r[5] else None, r[6], r[7])
