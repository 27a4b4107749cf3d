"""Step persistence tables on SQL: run records, the event log, snapshots and the tool-effect ledger."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ..messages import ModelMessage, RunUsage
from ._records import RunRecord, Snapshot, StepEvent, ToolEffect
from ._sql import SQLCore, now_text, parse_time

__all__ = ['SQLStepWrites', 'SQLSteps']


class SQLSteps(SQLCore):
    """Step-store operations (synchronous; the stores wrap them for async). Every write is idempotent
    under retry: a repeated `(run_id, idempotency_key)` is dropped."""

    def register_run_sync(self, run_id: str, *, conversation_id: str, model_name: str | None = None) -> None:
        with self._write() as conn:
            self._exec(
                conn,
                "INSERT INTO runs (run_id, conversation_id, model_name, status, started_at) VALUES (?, ?, ?, 'running', ?) "
                'ON CONFLICT (run_id) DO NOTHING',
                (run_id, conversation_id, model_name, now_text()),
            )

    def finish_run_sync(
        self, run_id: str, *, status: str, output_json: str | None = None, usage: RunUsage | None = None
    ) -> None:
        with self._write() as conn:
            self._exec(
                conn,
                'UPDATE runs SET status = ?, finished_at = ?, output = COALESCE(?, output), usage = COALESCE(?, usage) '
                'WHERE run_id = ?',
                (status, now_text(), output_json, msgspec.json.encode(usage).decode() if usage else None, run_id),
            )

    def get_run_sync(self, run_id: str) -> RunRecord | None:
        with self._read() as conn:
            row = self._one(
                conn,
                'SELECT run_id, conversation_id, started_at, finished_at, model_name, output, usage, status '
                'FROM runs WHERE run_id = ?',
                (run_id,),
            )
        return _run(row) if row else None

    def list_runs_sync(self, conversation_id: str) -> list[RunRecord]:
        with self._read() as conn:
            rows = self._all(
                conn,
                'SELECT run_id, conversation_id, started_at, finished_at, model_name, output, usage, status '
                'FROM runs WHERE conversation_id = ? ORDER BY started_at, run_id',
                (conversation_id,),
            )
        return [_run(r) for r in rows]

    def append_event_sync(self, event: StepEvent, *, conversation_id: str | None) -> None:
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

    def list_events_sync(self, run_id: str) -> list[StepEvent]:
        with self._read() as conn:
            rows = self._all(
                conn,
                'SELECT run_id, kind, step_index, timestamp, tool_call_id, tool_name, error, idempotency_key '
                'FROM events WHERE run_id = ? ORDER BY id',
                (run_id,),
            )
        return [StepEvent(r[0], r[1], r[2], parse_time(r[3]), r[4], r[5], r[6], r[7]) for r in rows]

    def save_snapshot_sync(
        self,
        *,
        run_id: str,
        conversation_id: str,
        scope: str,
        state: str,
        step_index: int,
        idempotency_key: str | None,
    ) -> Snapshot:
        """Record the conversation's current tip as a snapshot of `run_id` (a pointer, not a copy)."""
        with self._write() as conn:
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
                    state,
                    step_index,
                    idempotency_key,
                    stamp,
                ),
            )
        return Snapshot(
            run_id,
            conversation_id,
            conversation.length,
            conversation.head_branch,
            state,  # type: ignore[arg-type]
            step_index,
            parse_time(stamp),
        )

    def list_snapshots_sync(self, run_id: str) -> list[Snapshot]:
        with self._read() as conn:
            rows = self._all(
                conn,
                'SELECT run_id, conversation_id, position, branch_id, state, step_index, timestamp '
                'FROM snapshots WHERE run_id = ? ORDER BY id',
                (run_id,),
            )
        return [Snapshot(r[0], r[1], r[2], r[3], r[4], r[5], parse_time(r[6])) for r in rows]

    def record_tool_effect_sync(self, effect: ToolEffect, *, conversation_id: str | None) -> None:
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

    def tool_effects_sync(self, run_id: str) -> list[ToolEffect]:
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

    def tool_effects_for_conversation_sync(self, conversation_id: str) -> list[ToolEffect]:
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


def _run(row: tuple) -> RunRecord:  # type: ignore[type-arg]
    usage = msgspec.json.decode(row[6], type=RunUsage) if row[6] else None
    return RunRecord(
        row[0], row[1], parse_time(row[2]), parse_time(row[3]) if row[3] else None, row[4], row[5], usage, row[7]
    )


class SQLStepWrites(SQLSteps):
    """The combined write StepPersistence makes at a boundary: messages, events, snapshot and
    ledger row in one transaction (one commit, and all or nothing on a crash)."""

    def step_write_sync(
        self,
        conversation_id: str,
        *,
        scope: str,
        run_id: str,
        expected_revision: int | None,
        messages: Sequence[ModelMessage] = (),
        history: Sequence[ModelMessage] | None = None,
        provenance: str = 'server',
        events: Sequence[StepEvent] = (),
        snapshot: tuple[str, int, str] | None = None,
        effect: ToolEffect | None = None,
        register: bool = False,
        finish: tuple[str, str | None, RunUsage | None] | None = None,
    ) -> int:
        """Apply one boundary. `messages` are appended; `history`, when given, replaces the stored
        history as a new branch instead (a processor rewrote it). `snapshot` is (state, step, key).
        `finish` is (status, output JSON, run usage): the run record is closed and, for a completed
        run, its usage is added to the conversation's total. Returns the revision after the write."""
        with self._write() as conn:
            conversation = self._open_for_write(conn, conversation_id, scope, expected_revision, create=True)
            revision = conversation.revision
            if register:
                self._exec(
                    conn,
                    "INSERT INTO runs (run_id, conversation_id, status, started_at) VALUES (?, ?, 'running', ?) "
                    'ON CONFLICT (run_id) DO NOTHING',
                    (run_id, conversation_id, now_text()),
                )
            if history is not None:
                revision = self._replace_locked(conn, conversation, list(history), provenance, run_id)  # type: ignore[arg-type]
            elif messages:
                revision = self._append_locked(conn, conversation, list(messages), provenance, run_id)  # type: ignore[arg-type]
            for event in events:
                self._insert_event(conn, event, conversation_id)
            if snapshot is not None:
                state, step_index, key = snapshot
                current = self._conversation(conn, conversation_id, scope)
                self._exec(
                    conn,
                    'INSERT INTO snapshots (run_id, conversation_id, branch_id, position, state, step_index, '
                    'idempotency_key, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
                    (run_id, conversation_id, current.head_branch, current.length, state, step_index, key, now_text()),
                )
            if effect is not None:
                self._upsert_effect(conn, effect, conversation_id)
            if finish is not None:
                revision = self._finish_run_locked(conn, conversation_id, scope, run_id, *finish)
            return revision

    def _finish_run_locked(
        self,
        conn: Any,
        conversation_id: str,
        scope: str,
        run_id: str,
        status: str,
        output_json: str | None,
        usage: RunUsage | None,
    ) -> int:
        self._exec(
            conn,
            'UPDATE runs SET status = ?, finished_at = ?, output = COALESCE(?, output), usage = COALESCE(?, usage) '
            'WHERE run_id = ?',
            (status, now_text(), output_json, msgspec.json.encode(usage).decode() if usage else None, run_id),
        )
        conversation = self._conversation(conn, conversation_id, scope)
        if status != 'completed' or usage is None:
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

    def conversation_state_sync(self, conversation_id: str, *, scope: str) -> tuple[int, int] | None:
        """(revision, length) of a conversation, or None if it does not exist in this scope."""
        from ..exceptions import ConversationNotFound

        with self._read() as conn:
            try:
                conversation = self._conversation(conn, conversation_id, scope)
            except ConversationNotFound:
                return None
            return conversation.revision, conversation.length

    def load_at_sync(self, conversation_id: str, *, scope: str, branch_id: int, position: int) -> list[ModelMessage]:
        """The history of `branch_id`'s lineage up to `position` (what a snapshot points at)."""
        with self._read() as conn:
            self._conversation(conn, conversation_id, scope)
            segments = self._lineage(conn, branch_id)
            rows = self._raw_messages(conn, segments, 0, position)
        return self._decode(rows, conversation_id)
