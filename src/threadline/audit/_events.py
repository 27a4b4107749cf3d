"""Content-free audit events for what a run's repair changed (the audit reads them).

Lives in storage, below the audit layer, because StepPersistence writes them as runs go.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from threadline.messages import RepairEvent
from threadline.storage import AsyncStore, AuditEvent, SyncStore
from threadline.trust.keys import mac_hex, text_bytes

__all__ = ['audit_events_from_repair', 'keyed_hash', 'record_repair_events']


def keyed_hash(key: bytes, value: str, length: int = 16) -> str:
    """HMAC-SHA256 of `value`, hex, shortened: identifies a value without revealing it."""
    return mac_hex(key, text_bytes(value))[:length]


def audit_events_from_repair(
    events: Sequence[RepairEvent], *, conversation_id: str, key: bytes, observed_at: datetime | None = None
) -> list[AuditEvent]:
    """Content-free audit events for what a repair changed (the tool call id only as a keyed hash)."""
    at = observed_at or datetime.now(tz=UTC)
    return [
        AuditEvent(
            conversation_id, e.kind, keyed_hash(key, e.tool_call_id) if e.tool_call_id else None, e.message_index, at
        )
        for e in events
    ]


def record_repair_events(
    store: AsyncStore[SyncStore], events: Sequence[RepairEvent], *, conversation_id: str, scope: str
) -> None:
    """Write the audit events of a run's repair to the store, keyed with the store's audit key."""
    if events:
        key = store.sync.audit_key()
        store.sync.record_audit_events(
            conversation_id, audit_events_from_repair(events, conversation_id=conversation_id, key=key), scope=scope
        )
