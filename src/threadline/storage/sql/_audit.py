"""Records the replay audit reads and writes, on SQL: outcome receipts, wait records,
content-free audit events, quarantine, and the store's audit key."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from threadline.storage._neutral import now_text, parse_time
from threadline.storage._records import AuditEvent, OutcomeReceipt, ReceiptStrength, WaitRecord, check_strength
from threadline.storage.sql._base import SQLBase

__all__ = ['AuditOps']


class AuditOps(SQLBase):
    """The audit half of the contract; its rows are erased with their conversation like everything else."""

    def audit_key(self) -> bytes:
        """The key for the audit's keyed hashes: `THREADLINE_AUDIT_KEY`, else one derived from the
        store key, which lives outside the database (see `StoreSeal.derived_key`)."""
        configured = os.environ.get('THREADLINE_AUDIT_KEY')
        return configured.encode() if configured else self._seal.derived_key('audit')

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
        """Store a receipt for the outcome of a run (see `OutcomeReceipt` for the strengths)."""
        check_strength(strength)
        stamp = observed_at.isoformat() if observed_at else now_text()
        with self._write() as conn:
            self._conversation(conn, conversation_id, scope)
            receipt = self._insert_id(
                conn,
                'INSERT INTO outcome_receipts (conversation_id, run_id, expected_effect, destination, idempotency_key, '
                'observed_revision, evidence_ref, strength, observed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
                (
                    conversation_id,
                    run_id,
                    expected_effect,
                    destination,
                    idempotency_key,
                    observed_revision,
                    evidence_ref,
                    strength,
                    stamp,
                ),
            )
            self._touch(conversation_id, ('receipt', receipt))
        return OutcomeReceipt(
            conversation_id,
            run_id,
            expected_effect,
            destination,
            idempotency_key,
            observed_revision,
            evidence_ref,
            strength,
            parse_time(stamp),
        )

    def outcomes(self, conversation_id: str, *, scope: str) -> list[OutcomeReceipt]:
        with self._read() as conn:
            self._conversation(conn, conversation_id, scope)
            rows = self._all(
                conn,
                'SELECT conversation_id, run_id, expected_effect, destination, idempotency_key, '
                'observed_revision, evidence_ref, strength, observed_at FROM outcome_receipts '
                'WHERE conversation_id = ? ORDER BY id',
                (conversation_id,),
            )
        return [OutcomeReceipt(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], parse_time(r[8])) for r in rows]

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
        """Record that a run waits on `owner` for `decision` until `deadline` (resume with `resume_token`)."""
        stamp = now_text()
        with self._write() as conn:
            self._conversation(conn, conversation_id, scope)
            wait = self._insert_id(
                conn,
                'INSERT INTO wait_records (conversation_id, run_id, owner, decision, deadline, resume_token, created_at) '
                'VALUES (?, ?, ?, ?, ?, ?, ?)',
                (conversation_id, run_id, owner, decision, deadline.isoformat(), resume_token, stamp),
            )
            self._touch(conversation_id, ('wait', wait))
        return WaitRecord(conversation_id, run_id, owner, decision, deadline, resume_token, parse_time(stamp))

    def resolve_wait(self, conversation_id: str, *, scope: str, resume_token: str) -> None:
        with self._write() as conn:
            self._conversation(conn, conversation_id, scope)
            self._exec(
                conn,
                'UPDATE wait_records SET resolved_at = ? WHERE conversation_id = ? AND resume_token = ?',
                (now_text(), conversation_id, resume_token),
            )
            rows = self._all(
                conn,
                'SELECT id FROM wait_records WHERE conversation_id = ? AND resume_token = ?',
                (conversation_id, resume_token),
            )
            self._touch(conversation_id, *(('wait', r[0]) for r in rows))

    def waits(self, conversation_id: str, *, scope: str) -> list[WaitRecord]:
        with self._read() as conn:
            self._conversation(conn, conversation_id, scope)
            rows = self._all(
                conn,
                'SELECT conversation_id, run_id, owner, decision, deadline, resume_token, created_at, '
                'resolved_at FROM wait_records WHERE conversation_id = ? ORDER BY id',
                (conversation_id,),
            )
        return [
            WaitRecord(
                r[0], r[1], r[2], r[3], parse_time(r[4]), r[5], parse_time(r[6]), parse_time(r[7]) if r[7] else None
            )
            for r in rows
        ]

    def record_audit_events(self, conversation_id: str, events: Sequence[AuditEvent], *, scope: str) -> None:
        """Store content-free audit events (a keyed hash of the tool call id, never arguments or results)."""
        if not events:
            return
        with self._write() as conn:
            self._conversation(conn, conversation_id, scope)
            for event in events:
                self._exec(
                    conn,
                    'INSERT INTO audit_events (conversation_id, kind, tool_call_hash, position, observed_at) '
                    'VALUES (?, ?, ?, ?, ?)',
                    (conversation_id, event.kind, event.tool_call_hash, event.position, event.observed_at.isoformat()),
                )

    def audit_events(self, conversation_id: str, *, scope: str) -> list[AuditEvent]:
        with self._read() as conn:
            self._conversation(conn, conversation_id, scope)
            rows = self._all(
                conn,
                'SELECT conversation_id, kind, tool_call_hash, position, observed_at FROM audit_events '
                'WHERE conversation_id = ? ORDER BY id',
                (conversation_id,),
            )
        return [AuditEvent(r[0], r[1], r[2], r[3], parse_time(r[4])) for r in rows]

    def quarantine(self, conversation_id: str, *, scope: str, report: dict[str, Any] | None) -> None:
        """Mark the conversation quarantined with a (content-free) audit report; `None` lifts it."""
        with self._write() as conn:
            self._conversation(conn, conversation_id, scope)
            self._exec(
                conn,
                'UPDATE conversations SET quarantine = ? WHERE id = ?',
                (json.dumps(report) if report is not None else None, conversation_id),
            )
            self._touch(conversation_id, ('head',))
