"""Step persistence tables on SQL: run records, the event log, snapshots and the tool-effect ledger."""

from __future__ import annotations

import msgspec

from ..messages import RunUsage
from ._records import RunRecord, Snapshot, StepEvent, ToolEffect
from ._sql import SQLCore, now_text, parse_time

__all__ = ['SQLSteps']


class SQLSteps(SQLCore):
    """Step-store operations (synchronous; the stores wrap them for async). Every write is idempotent
    under retry: a repeated `(run_id, idempotency_key)` is dropped."""

    def register_run_sync(self, run_id: str, *, conversation_id: str, model_name: str | None = None) -> None:
        with self._write() as conn:
            self._exec(
                conn, "INSERT INTO runs (run_id, conversation_id, model_name, status, started_at) VALUES (?, ?, ?, 'running', ?) "
                'ON CONFLICT (run_id) DO NOTHING', (run_id, conversation_id, model_name, now_text()),
            )

    def finish_run_sync(self, run_id: str, *, status: str, output_json: str | None = None, usage: RunUsage | None = None) -> None:
        with self._write() as conn:
            self._exec(
                conn, 'UPDATE runs SET status = ?, finished_at = ?, output = COALESCE(?, output), usage = COALESCE(?, usage) '
                'WHERE run_id = ?',
                (status, now_text(), output_json, msgspec.json.encode(usage).decode() if usage else None, run_id),
            )

    def get_run_sync(self, run_id: str) -> RunRecord | None:
        with self._read() as conn:
            row = self._one(conn, 'SELECT run_id, conversation_id, started_at, finished_at, model_name, output, usage, status '
                            'FROM runs WHERE run_id = ?', (run_id,))
        return _run(row) if row else None

    def list_runs_sync(self, conversation_id: str) -> list[RunRecord]:
        with self._read() as conn:
            rows = self._all(conn, 'SELECT run_id, conversation_id, started_at, finished_at, model_name, output, usage, status '
                             'FROM runs WHERE conversation_id = ? ORDER BY started_at, run_id', (conversation_id,))
        return [_run(r) for r in rows]

    def append_event_sync(self, event: StepEvent, *, conversation_id: str | None) -> None:
        with self._write() as conn:
            self._exec(
                conn, 'INSERT INTO events (run_id, conversation_id, kind, step_index, tool_call_id, tool_name, error, '
                'idempotency_key, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
                (event.run_id, conversation_id, event.kind, event.step_index, event.tool_call_id, event.tool_name,
                 event.error, event.idempotency_key, event.timestamp.isoformat()),
            )

    def list_events_sync(self, run_id: str) -> list[StepEvent]:
        with self._read() as conn:
            rows = self._all(conn, 'SELECT run_id, kind, step_index, timestamp, tool_call_id, tool_name, error, idempotency_key '
                             'FROM events WHERE run_id = ? ORDER BY id', (run_id,))
        return [StepEvent(r[0], r[1], r[2], parse_time(r[3]), r[4], r[5], r[6], r[7]) for r in rows]

    def save_snapshot_sync(
        self, *, run_id: str, conversation_id: str, scope: str, state: str, step_index: int, idempotency_key: str | None,
    ) -> Snapshot:
        """Record the conversation's current tip as a snapshot of `run_id` (a pointer, not a copy)."""
        with self._write() as conn:
            conversation = self._conversation(conn, conversation_id, scope)
            stamp = now_text()
            self._exec(
                conn, 'INSERT INTO snapshots (run_id, conversation_id, branch_id, position, state, step_index, '
                'idempotency_key, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
                (run_id, conversation_id, conversation.head_branch, conversation.length, state, step_index,
                 idempotency_key, stamp),
            )
        return Snapshot(run_id, conversation_id, conversation.length, conversation.head_branch, state,  # type: ignore[arg-type]
                        step_index, parse_time(stamp))

    def list_snapshots_sync(self, run_id: str) -> list[Snapshot]:
        with self._read() as conn:
            rows = self._all(conn, 'SELECT run_id, conversation_id, position, branch_id, state, step_index, timestamp '
                             'FROM snapshots WHERE run_id = ? ORDER BY id', (run_id,))
        return [Snapshot(r[0], r[1], r[2], r[3], r[4], r[5], parse_time(r[6])) for r in rows]

    def record_tool_effect_sync(self, effect: ToolEffect, *, conversation_id: str | None) -> None:
        """Upsert the ledger row of `(run_id, tool_call_id)`; a later status wins, and an
        idempotency key or summary already recorded is kept unless a new one is given."""
        with self._write() as conn:
            self._exec(
                conn, 'INSERT INTO tool_effects (run_id, tool_call_id, conversation_id, tool_name, status, started_at, '
                'ended_at, idempotency_key, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, tool_call_id) '
                'DO UPDATE SET status = excluded.status, ended_at = excluded.ended_at, '
                'idempotency_key = COALESCE(excluded.idempotency_key, tool_effects.idempotency_key), '
                'summary = COALESCE(excluded.summary, tool_effects.summary)',
                (effect.run_id, effect.tool_call_id, conversation_id, effect.tool_name, effect.status,
                 effect.started_at.isoformat(), effect.ended_at.isoformat() if effect.ended_at else None,
                 effect.idempotency_key, effect.summary),
            )

    def tool_effects_sync(self, run_id: str) -> list[ToolEffect]:
        with self._read() as conn:
            rows = self._all(conn, 'SELECT run_id, tool_call_id, tool_name, status, started_at, ended_at, idempotency_key, '
                             'summary FROM tool_effects WHERE run_id = ? ORDER BY started_at, tool_call_id', (run_id,))
        return [ToolEffect(r[0], r[1], r[2], r[3], parse_time(r[4]), parse_time(r[5]) if r[5] else None, r[6], r[7]) for r in rows]

    def tool_effects_for_conversation_sync(self, conversation_id: str) -> list[ToolEffect]:
        with self._read() as conn:
            rows = self._all(conn, 'SELECT run_id, tool_call_id, tool_name, status, started_at, ended_at, idempotency_key, '
                             'summary FROM tool_effects WHERE conversation_id = ? ORDER BY started_at', (conversation_id,))
        return [ToolEffect(r[0], r[1], r[2], r[3], parse_time(r[4]), parse_time(r[5]) if r[5] else None, r[6], r[7]) for r in rows]


def _run(row: tuple) -> RunRecord:  # type: ignore[type-arg]
    usage = msgspec.json.decode(row[6], type=RunUsage) if row[6] else None
    return RunRecord(row[0], row[1], parse_time(row[2]), parse_time(row[3]) if row[3] else None, row[4], row[5], usage, row[7])
