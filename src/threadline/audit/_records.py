"""Writing what the audit reads: reconciling an interrupted call, and content-free audit events."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Unpack

import msgspec

from threadline.audit._events import audit_events_from_repair, record_repair_events
from threadline.audit._gates import RECONCILED_METADATA_KEY
from threadline.exceptions import UserError
from threadline.messages import (
    ModelMessage,
    ModelRequest,
    SanitizeOptions,
    StrippedItem,
    ToolCallPart,
    ToolReturnPart,
    sanitize_report,
)
from threadline.messages.wire import SYNTHESIZED_METADATA_KEY
from threadline.storage import AsyncStore, AuditEvent, SyncStore

__all__ = [
    'audit_events_from_repair',
    'audit_events_from_sanitize',
    'reconcile_tool_call',
    'release_quarantine',
    'record_repair_events',
    'sanitize_loaded',
]


def reconcile_tool_call(
    store: AsyncStore[SyncStore],
    conversation_id: str,
    tool_call_id: str,
    *,
    scope: str,
    result: Any,
    evidence: str,
    expected_revision: int | None = None,
) -> int:
    """Close an interrupted call with its real result, after the application checked the destination.

    The result is marked reconciled (`{'threadline_reconciled': {'evidence': ...}}` metadata) so
    the history says how it was learned. An open call gets the result appended after the stored
    tip; a call closed by repair's synthesized `interrupted` return has that return replaced, in a
    new branch (the old tip stays reachable). Returns the new revision.
    """
    stored = store.sync.load(conversation_id, scope=scope)
    call = next(
        (p for m in stored.messages for p in m.parts if isinstance(p, ToolCallPart) and p.tool_call_id == tool_call_id),
        None,
    )
    if call is None:
        raise UserError(f'conversation {conversation_id!r} has no tool call {tool_call_id!r} to reconcile')
    real = ToolReturnPart(
        call.tool_name,
        result,
        tool_call_id,
        tool_kind=call.tool_kind,
        metadata={RECONCILED_METADATA_KEY: {'evidence': evidence}},
        timestamp=datetime.now(tz=UTC),
    )
    revision = stored.revision if expected_revision is None else expected_revision
    messages = list(stored.messages)
    for index, message in enumerate(messages):
        if not isinstance(message, ModelRequest):
            continue
        for j, part in enumerate(message.parts):
            if isinstance(part, ToolReturnPart) and part.tool_call_id == tool_call_id:
                if not (isinstance(part.metadata, dict) and part.metadata.get(SYNTHESIZED_METADATA_KEY)):
                    raise UserError(f'tool call {tool_call_id!r} already has a real result; nothing to reconcile')
                parts = list(message.parts)
                parts[j] = real
                messages[index] = msgspec.structs.replace(message, parts=parts)
                revision = int(store.sync.replace(conversation_id, messages, scope=scope, expected_revision=revision))
                _close_ledger(store, conversation_id, tool_call_id, scope=scope, evidence=evidence)
                return revision
    request = ModelRequest(parts=[real], timestamp=real.timestamp, conversation_id=conversation_id)
    revision = int(store.sync.append(conversation_id, [request], scope=scope, expected_revision=revision))
    _close_ledger(store, conversation_id, tool_call_id, scope=scope, evidence=evidence)
    return revision


def _close_ledger(
    store: AsyncStore[SyncStore], conversation_id: str, tool_call_id: str, *, scope: str, evidence: str
) -> None:
    """Mark the call's ledger row completed: its effect is known now (the summary says how)."""
    for effect in store.sync.tool_effects_for_conversation(conversation_id, scope=scope):
        if effect.tool_call_id == tool_call_id and effect.status == 'started':
            done = dataclasses.replace(
                effect, status='completed', ended_at=datetime.now(tz=UTC), summary=f'reconciled ({evidence})'
            )
            store.sync.record_tool_effect(done, conversation_id=conversation_id, scope=scope)


def audit_events_from_sanitize(
    stripped: Sequence[StrippedItem], *, conversation_id: str, observed_at: datetime | None = None
) -> list[AuditEvent]:
    """Content-free audit events for what sanitizing a loaded history stripped."""
    at = observed_at or datetime.now(tz=UTC)
    return [AuditEvent(conversation_id, f'sanitize:{s.kind}', None, s.message_index, at) for s in stripped]


def sanitize_loaded(
    store: AsyncStore[SyncStore],
    conversation_id: str,
    messages: Sequence[ModelMessage],
    *,
    scope: str,
    **options: Unpack[SanitizeOptions],
) -> list[ModelMessage]:
    """Sanitize a history loaded from an untrusted source and record, content-free, what was
    stripped (one audit event per stripped item) against `conversation_id`. Options are those of
    `sanitize_messages`. Returns the sanitized history."""

    sanitized, stripped = sanitize_report(messages, **options)
    if stripped and store.sync.conversation_state(conversation_id, scope=scope) is not None:
        store.sync.record_audit_events(
            conversation_id, audit_events_from_sanitize(stripped, conversation_id=conversation_id), scope=scope
        )
    return sanitized


def release_quarantine(store: AsyncStore[SyncStore], conversation_id: str, *, scope: str, reason: str) -> None:
    """Lift a quarantine after review, and record that it was lifted as a content-free audit event.
    `reason` (who reviewed it, a ticket id) is required so a release is always a decision; like all
    audit events, the record holds no free text."""
    if not reason or not isinstance(reason, str):
        raise UserError('release_quarantine needs a reason (who reviewed it, a ticket id)')
    store.sync.quarantine(conversation_id, scope=scope, report=None)
    event = AuditEvent(conversation_id, 'quarantine_released', None, None, datetime.now(tz=UTC))
    store.sync.record_audit_events(conversation_id, [event], scope=scope)
