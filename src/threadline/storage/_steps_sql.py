"""Step persistence tables on SQL: run records, the event log, snapshots and the tool-effect ledger."""

from __future__ import annotations

from typing import Any

import msgspec

from ..exceptions import ConversationNotFound
from ..messages import ModelMessage, RunUsage
from ._neutral import now_text, parse_time
from ._records import RunFinish, RunRecord, Snapshot, SnapshotMark, SnapshotRequest, StepEvent, StepWrite, ToolEffect
from ._sql_base import SQLBase

__all__ = ['StepOps']


class StepOps(SQLBase):
    """The step half of the contract. Every write is idempotent under retry: a repeated
    `(run_id, idempotency_key)` is dropped. A boundary's messages, events, snapshot and ledger row
    go in one transaction (`step_write`): one commit, and all or nothing on a crash."""

    def register_run(self, run_id: str, *, conversation_id: str, model_name: str | None = None) -> None:
        with self._write() as conn:
            self._exec(
                conn,
                "INSERT INTO runs (run_id, conversation_id, model_name, status, started_at) VALUES (?, ?, ?, 'running', ?) "
                'ON CONFLICT (run_id) DO NOTHING',
                (run_id, conversation_id, model_name, now_text()),
            )

    def finish_run(self, finish: RunFinish) -> None:
        with self._write() as conn:
            self._close_run(conn, finish)

    def _close_run(self, conn: Any, finish: RunFinish) -> None:
        usage = msgspec.json.encode(finish.usage).decode() if finish.usage else None
        self._exec(
            conn,
            'UPDATE runs SET status = ?, finished_at = ?, output = COALESCE(?, output), usage = COALESCE(?, usage) '
            'WHERE run_id = ?',
            (finish.status, now_text(), finish.output_json, usage, finish.run_id),
        )

    def get_run(self, run_id: str) -> RunRecord | None:
        with self._read() as conn:
            row = self._one(
                conn,
                'SELECT run_id, conversation_id, started_at, finished_at, model_name, output, usage, status '
                'FROM runs WHERE run_id = ?',
                (run_id,),
            )
        return _run(row) if row else None

    def list_runs(self, conversation_id: str) -> list[RunRecord]:
        with self._read() as conn:
            rows = self._all(
                conn,
                'SELECT run_id, conversation_id, started_at, finished_at, model_name, output, usage, status '
                'FROM runs WHERE conversation_id = ? ORDER BY started_at, run_id',
                (conversation_id,),
            )
        return [_run(r) for r in rows]

    def append_event(self, event: StepEvent, *, conversation_id: str | None) -> None:
        with self._write() as conn:
            self._insert_event(conn, event, conversation_id)

    def _insert_event(self, conn: Any, event: StepEvent, conversation_id: str | None) -> None:
        """Record one event; a replayed event (same idempotency key) is ignored."""
        self._exec(
            conn,
            'INSERT INTO events (run_id, conversation_id, kind, step_index, tool_call_id, tool_name, error, '
            'idempotency_key, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
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
            ),
        )

    def list_events(self, run_id: str) -> list[StepEvent]:
        with self._read() as conn:
            rows = self._all(
                conn,
                'SELECT run_id, kind, step_index, timestamp, tool_call_id, tool_name, error, idempotency_key '
                'FROM events WHERE run_id = ? ORDER BY id',
                (run_id,),
            )
        return [StepEvent(r[0], r[1], r[2], parse_time(r[3]), r[4], r[5], r[6], r[7]) for r in rows]

    def save_snapshot(self, request: SnapshotRequest) -> Snapshot:
        with self._write() as conn:
            return self._snapshot(conn, request.run_id, request.conversation_id, request.scope, request.mark)

    def _snapshot(self, conn: Any, run_id: str, conversation_id: str, scope: str, mark: SnapshotMark) -> Snapshot:
        conversation = self._conversation(conn, conversation_id, scope)
        stamp = now_text()
        self._exec(
            conn,
            'INSERT INTO snapshots (run_id, conversation_id, branch_id, position, state, step_index, '
            'idempotency_key, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
            (
                run_id,
                conversation_id,
                conversation.head_branch,
                conversation.length,
                mark.state,
                mark.step_index,
                mark.idempotency_key,
                stamp,
            ),
        )
        return Snapshot(
            run_id,
            conversation_id,
            conversation.length,
            conversation.head_branch,
            mark.state,
            mark.step_index,
            parse_time(stamp),
        )

    def list_snapshots(self, run_id: str) -> list[Snapshot]:
        with self._read() as conn:
            rows = self._all(
                conn,
                'SELECT run_id, conversation_id, position, branch_id, state, step_index, timestamp '
                'FROM snapshots WHERE run_id = ? ORDER BY id',
                (run_id,),
            )
        return [Snapshot(r[0], r[1], r[2], r[3], r[4], r[5], parse_time(r[6])) for r in rows]

    def record_tool_effect(self, effect: ToolEffect, *, conversation_id: str | None) -> None:
        """Upsert the ledger row of `(run_id, tool_call_id)`; a later status wins, and an
        idempotency key or summary already recorded is kept unless a new one is given."""
        with self._write() as conn:
            self._upsert_effect(conn, effect, conversation_id)

    def _upsert_effect(self, conn: Any, effect: ToolEffect, conversation_id: str | None) -> None:
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

    def tool_effects(self, run_id: str) -> list[ToolEffect]:
        with self._read() as conn:
            rows = self._all(
                conn,
                'SELECT run_id, tool_call_id, tool_name, status, started_at, ended_at, idempotency_key, '
                'summary FROM tool_effects WHERE run_id = ? ORDER BY started_at, tool_call_id',
                (run_id,),
            )
        return [
            ToolEffect(r[0], r[1], r[2], r[3], parse_time(r[4]), parse_time(r[5]) if r[5] else None, r[6], r[7])
            for r in rows
        ]

    def tool_effects_for_conversation(self, conversation_id: str) -> list[ToolEffect]:
        with self._read() as conn:
            rows = self._all(
                conn,
                'SELECT run_id, tool_call_id, tool_name, status, started_at, ended_at, idempotency_key, '
                'summary FROM tool_effects WHERE conversation_id = ? ORDER BY started_at',
                (conversation_id,),
            )
        return [
            ToolEffect(r[0], r[1], r[2], r[3], parse_time(r[4]), parse_time(r[5]) if r[5] else None, r[6], r[7])
            for r in rows
        ]

    def step_write(self, write: StepWrite) -> int:
        """Apply one boundary (see `StepWrite`); returns the revision after the write. A completed
        run's usage is added to the conversation's total."""
        with self._write() as conn:
            conversation = self._open_for_write(
                conn, write.conversation_id, write.scope, write.expected_revision, create=True
            )
            revision = conversation.revision
            if write.register:
                self._exec(
                    conn,
                    "INSERT INTO runs (run_id, conversation_id, status, started_at) VALUES (?, ?, 'running', ?) "
                    'ON CONFLICT (run_id) DO NOTHING',
                    (write.run_id, write.conversation_id, now_text()),
                )
            if write.history is not None:
                revision = self._replace_locked(conn, conversation, list(write.history), write.provenance, write.run_id)
            elif write.messages:
                revision = self._append_locked(conn, conversation, list(write.messages), write.provenance, write.run_id)
            for event in write.events:
                self._insert_event(conn, event, write.conversation_id)
            if write.snapshot is not None:
                self._snapshot(conn, write.run_id, write.conversation_id, write.scope, write.snapshot)
            if write.effect is not None:
                self._upsert_effect(conn, write.effect, write.conversation_id)
            if write.finish is not None:
                revision = self._finish_run_locked(conn, write.conversation_id, write.scope, write.finish)
            return revision

    def _finish_run_locked(self, conn: Any, conversation_id: str, scope: str, finish: RunFinish) -> int:
        self._close_run(conn, finish)
        conversation = self._conversation(conn, conversation_id, scope)
        usage = finish.usage
        if finish.status != 'completed' or usage is None:
            return conversation.revision
        total = (
            msgspec.json.decode(conversation.usage, type=RunUsage)
            if conversation.usage not in ('', '{}')
            else RunUsage()
        )
        total.incr(usage)
        return self._finish_write(
            conn,
            conversation,
            head=conversation.head_branch,
            length=conversation.length,
            link=conversation.chain_head,
            usage=msgspec.json.encode(total).decode(),
            runs=1,
        )

    def conversation_state(self, conversation_id: str, *, scope: str) -> tuple[int, int] | None:
        """(revision, length) of a conversation, or None if it does not exist in this scope."""
        with self._read() as conn:
            try:
                conversation = self._conversation(conn, conversation_id, scope)
            except ConversationNotFound:
                return None
            return conversation.revision, conversation.length

    def load_at(self, conversation_id: str, *, scope: str, branch_id: int, position: int) -> list[ModelMessage]:
        """The history of `branch_id`'s lineage up to `position` (what a snapshot points at)."""
        with self._read() as conn:
            self._conversation(conn, conversation_id, scope)
            segments = self._lineage(conn, branch_id)
            rows = self._raw_messages(conn, segments, 0, position)
        return self._decode(rows, conversation_id)


def _run(row: tuple[Any, ...]) -> RunRecord:
    usage = msgspec.json.decode(row[6], type=RunUsage) if row[6] else None
    return RunRecord(
        row[0], row[1], parse_time(row[2]), parse_time(row[3]) if row[3] else None, row[4], row[5], usage, row[7]
    )
