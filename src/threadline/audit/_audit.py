"""`audit_history`: decide whether a stored (or client-supplied) history is safe to act on."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from threadline.audit._context import AuditContext
from threadline.audit._contract import resolve_key
from threadline.audit._gates import (
    Facts,
    gate_authority,
    gate_outcome,
    gate_prompt,
    gate_scope,
    gate_serialization,
    gate_tools,
)
from threadline.audit._report import AuditReport, GateResult, headline
from threadline.exceptions import ConversationNotFound, MessageValidationError, UserError
from threadline.messages import ModelMessage, ModelMessagesTypeAdapter, ModelRequest, ModelResponse
from threadline.messages.wire import ForeignMessage, from_pydantic_ai_package, own_messages
from threadline.storage import StoredConversation

__all__ = ['audit_history']

_ADVICE = {
    'INTERRUPTED_TOOL': "Do not retry the interrupted call automatically: query the destination with the ledger's "
    'idempotency key (inspect_recovery) first, then reconcile_tool_call with what you found.',
    'UNTRUSTED_HISTORY': "Resume from the server's own stored copy of the conversation, not from the client's.",
    'SCOPE_DRIFT': "Load the conversation under the caller's scope and continue it under its own id (fork with a new id).",
    'SYSTEM_PROMPT_GAP': 'Reinject the required system prompt (ReinjectSystemPrompt) or check the prompt contract.',
    'ORPHAN_RESULT_REMOVED': 'A tool result without its call was found; repair will drop it. Keep the audit event.',
    'MISSING_OUTCOME_RECEIPT': 'Re-read the destination and record_outcome(...) with what you observed.',
    'BLOCKED': "The expected progress window closed (or a wait expired): escalate to the wait's owner.",
    'SERIALIZATION_FAILURE': 'The history does not load or does not round-trip; restore it from the store.',
}


def audit_history(
    history: bytes | str | Sequence[ModelMessage | ForeignMessage] | StoredConversation, context: AuditContext
) -> AuditReport:
    """Run the six gates over `history` (messages, serialized JSON bytes/str, or a
    `StoredConversation`) and return the report. Any bytes produce a report, never an exception;
    a missing context field raises `UserError` naming it."""
    context.check()
    now = context.now or datetime.now(tz=UTC)
    key = resolve_key(context.key, context.store)
    facts = _load(history, context, key, now)
    serialization, digest = gate_serialization(facts, context)
    if facts.load_error is not None:
        skipped = [
            GateResult(name, False, (), {'skipped': 'history did not load'})
            for name in ('authority', 'prompt_continuity', 'tool_honesty', 'scope', 'outcome')
        ]
        gates = [serialization, *skipped]
        verdict, failures = headline(gates, False)
        return AuditReport(verdict, failures, tuple(gates), advice=(_ADVICE['SERIALIZATION_FAILURE'],))
    outcome, waiting = gate_outcome(facts, context)
    gates = [
        serialization,
        gate_authority(facts, context),
        gate_prompt(facts, context),
        gate_tools(facts, context),
        gate_scope(facts, context),
        outcome,
    ]
    verdict, failures = headline(gates, waiting)
    return AuditReport(
        verdict,
        failures,
        tuple(gates),
        waiting=verdict == 'WAITING',
        history_digest=digest,
        messages=len(facts.messages),
        advice=tuple(_ADVICE[f] for f in failures),
    )


def _load(history: Any, context: AuditContext, key: bytes, now: datetime) -> Facts:
    stored: StoredConversation | None = None
    raw: bytes | None = None
    messages: list[ModelMessage] = []
    store = context.store
    if isinstance(history, StoredConversation):
        if store is None:
            raise UserError('AuditContext.store is required to audit a StoredConversation')
        stored = history
        if history.raw is not None and history.offset == 0:
            facts = Facts(list(history.messages), key, now, raw=history.raw)
            _store_facts(facts, context, stored)
            return facts
        raw = store.sync.raw_history(history.conversation_id, scope=history.scope)
    elif isinstance(history, (bytes, bytearray, memoryview, str)):
        raw = bytes(history.encode() if isinstance(history, str) else history)
    elif isinstance(history, (list, tuple)) and all(
        isinstance(m, (ModelRequest, ModelResponse)) or from_pydantic_ai_package(m) for m in history
    ):
        try:
            messages = own_messages(history)  # pydantic-ai's messages are audited as the same wire form
        except UserError as exc:  # pydantic-ai's, without threadline.pydantic_ai imported
            return Facts([], key, now, load_error=str(exc))
        raw = ModelMessagesTypeAdapter.dump_json(messages)
    elif isinstance(history, (list, tuple)):
        raw = _parsed_json(history)  # what `request.json()` gives a handler: audited like the bytes
        if raw is None:
            return Facts([], key, now, load_error='messages: not JSON data')
    else:
        return Facts([], key, now, load_error=f'not a history: {type(history).__name__}')
    try:
        messages = ModelMessagesTypeAdapter.validate_json(raw)
    except MessageValidationError as exc:
        return Facts([], key, now, raw=raw, load_error=f'{exc.location}: {redact(exc.reason)}')
    facts = Facts(messages, key, now, raw=raw)
    if store is not None and context.conversation_id is not None:
        _store_facts(facts, context, stored)
    return facts


def _store_facts(facts: Facts, context: AuditContext, stored: StoredConversation | None) -> None:
    store = context.store
    scope = context.loaded_scope or context.scope
    conversation_id = stored.conversation_id if stored is not None else context.conversation_id
    if store is None or scope is None or conversation_id is None:
        return  # the caller checks both before asking for store facts
    try:
        if stored is None and context.source == 'store':
            stored = store.sync.load(conversation_id, scope=scope)
            same = (
                ModelMessagesTypeAdapter.dump_python(stored.messages, mode='json')
                == ModelMessagesTypeAdapter.dump_python(facts.messages, mode='json')
                if stored.offset == 0
                else False
            )
            if not same:
                stored = None  # what was given is not what the store holds: it carries no authority
        facts.stored = stored
        lineage_id = stored.conversation_id if stored is not None else conversation_id
        if stored is not None:
            facts.seal = store.sync.verify(lineage_id, scope=scope)
        facts.lineage = store.sync.lineage(lineage_id, scope=scope)
        facts.receipts = store.sync.outcomes(lineage_id, scope=scope)
        facts.waits = store.sync.waits(lineage_id, scope=scope)
        facts.effects = {e.tool_call_id: e for e in store.sync.tool_effects_for_conversation(lineage_id, scope=scope)}
    except ConversationNotFound:
        facts.stored = None


def _parsed_json(history: list[Any] | tuple[Any, ...]) -> bytes | None:
    try:
        return msgspec.json.encode(history)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return None


_QUOTED = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\d{3,}""")


def redact(reason: str) -> str:
    """A load error's reason without the values the input carried: quoted text and long numbers
    become `<value>`, so a report says what was wrong and where, never what the client sent."""
    return _QUOTED.sub('<value>', reason)
