"""The six gates. Each is independent: it reads the history and the context and says pass or fail,
with evidence made of positions, counts and keyed hashes (never message content)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import msgspec

from threadline.audit._context import AuditContext
from threadline.audit._contract import keyed_hash
from threadline.audit._report import GateResult
from threadline.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    ToolCallPart,
    ToolReturnPart,
    pairing_report,
)
from threadline.messages.wire import JSONObject, enc_hook
from threadline.storage import ChainCheck, OutcomeReceipt, StoredConversation, ToolEffect, WaitRecord
from threadline.trust import verify_history

__all__ = [
    'Facts',
    'RECONCILED_METADATA_KEY',
    'gate_authority',
    'gate_outcome',
    'gate_prompt',
    'gate_scope',
    'gate_serialization',
    'gate_tools',
]

RECONCILED_METADATA_KEY = 'threadline_reconciled'
_sorted = msgspec.json.Encoder(order='sorted')
_sorted_typed = msgspec.json.Encoder(order='sorted', enc_hook=enc_hook, decimal_format='string')
_generic = msgspec.json.Decoder()


@dataclass
class Facts:
    """What the audit loaded once and every gate may read."""

    messages: list[ModelMessage]
    key: bytes
    now: datetime
    raw: bytes | None = None
    stored: StoredConversation | None = None
    load_error: str | None = None
    lineage: list[tuple[str, int, int]] = field(default_factory=list)
    effects: dict[str, ToolEffect] = field(default_factory=dict)
    receipts: list[OutcomeReceipt] = field(default_factory=list)
    waits: list[WaitRecord] = field(default_factory=list)
    seal: ChainCheck | None = None
    """The store's `verify()` of the conversation (its keyed seal), when it came from a store."""

    def h(self, value: str | None) -> str | None:
        return None if value is None else keyed_hash(self.key, value)


def gate_serialization(facts: Facts, context: AuditContext) -> tuple[GateResult, str | None]:
    """The bytes load, and dump back to the same canonical JSON (sorted keys, no whitespace); a
    stored history also re-hashes against the store's chain (nothing changed since it was written)."""
    if facts.load_error is not None:
        return GateResult('serialization', False, ('SERIALIZATION_FAILURE',), {'error': facts.load_error}), None
    raw = facts.raw if facts.raw is not None else ModelMessagesTypeAdapter.dump_json(facts.messages)
    redump = ModelMessagesTypeAdapter.dump_json(facts.messages)
    if redump == raw:
        # Byte-identical: the canonical form of each message is its typed encoding with sorted keys.
        canon = [_sorted_typed.encode(m) for m in facts.messages]
        equal = True
    else:
        try:
            original = _generic.decode(raw)
        except (msgspec.DecodeError, RecursionError) as exc:  # e.g. a number past a float's range
            reason = (
                'the history nests too deeply'
                if isinstance(exc, RecursionError)
                else 'the bytes hold a value JSON cannot carry (a number out of range, say)'
            )
            return GateResult('serialization', False, ('SERIALIZATION_FAILURE',), {'error': reason}), None
        equal = original == _generic.decode(redump)
        canon = [_sorted.encode(m) for m in original]
    digest = hashlib.sha256(b'[' + b','.join(canon) + b']').hexdigest()
    evidence: JSONObject = {'messages': len(facts.messages), 'digest': digest[:16]}
    if not equal:
        return GateResult('serialization', False, ('SERIALIZATION_FAILURE',), evidence), digest
    if facts.stored is not None:
        problem = _verify_chain(canon, facts.stored)
        evidence['chain'] = problem[0] if problem else 'ok'
        if problem:
            evidence['first_bad_position'] = problem[1]
            return GateResult('serialization', False, ('SERIALIZATION_FAILURE',), evidence), digest
    if facts.seal is not None:
        evidence.update(_seal_evidence(facts.seal))
        if not facts.seal.ok:
            return GateResult('serialization', False, ('SERIALIZATION_FAILURE',), evidence), digest
    return GateResult('serialization', True, (), evidence), digest


def _seal_evidence(check: ChainCheck) -> JSONObject:
    """What the store's keyed seal says, without content: the key that protects it, how many seals
    verified, the tip outside the store, and the failure's code (never the record's values)."""
    return {
        'seal': 'ok' if check.ok else check.code,
        'store_key': check.key_id,
        'seals': check.seals,
        'tip': check.tip,
    }


def _verify_chain(canon: list[bytes], stored: StoredConversation) -> tuple[str, int | None] | None:
    """Re-hash the canonical messages along the store's chain; (reason, position) on a mismatch."""
    ends = {b.end: (b.start, b.link) for b in stored.batches if b.complete}
    link = bytes(32)
    sha = hashlib.sha256
    for index, message in enumerate(canon):
        link = sha(link + sha(message).digest()).digest()
        recorded = ends.get(index + 1)
        if recorded is not None and recorded[1] != link.hex():
            return 'a stored message changed', recorded[0]
    if link.hex() != stored.chain_head:
        return 'the chain head does not match', None
    return None


def gate_authority(facts: Facts, context: AuditContext) -> GateResult:
    """The history comes from this server's store, under the caller's scope, and no stored batch
    of it was supplied by a client; or it comes from a client with a valid signed envelope (only
    what a client may add follows the signed messages; the reason code says why one fails)."""
    if context.source == 'client' and context.envelope is not None:
        return _envelope_authority(facts, context)
    if context.source != 'store' or facts.stored is None:
        return GateResult('authority', False, ('UNTRUSTED_HISTORY',), {'source': context.source})
    client = [(b.start, b.end) for b in facts.stored.batches if b.provenance == 'client']
    evidence: JSONObject = {'source': 'store', 'batches': len(facts.stored.batches)}
    if facts.seal is not None and not facts.seal.ok:
        evidence['sealed'] = False  # provenance read from records that fail their seal proves nothing
        return GateResult('authority', False, ('UNTRUSTED_HISTORY',), evidence)
    if client:
        evidence['client_batches'] = client
        return GateResult('authority', False, ('UNTRUSTED_HISTORY',), evidence)
    return GateResult('authority', True, (), evidence)


def _envelope_authority(facts: Facts, context: AuditContext) -> GateResult:

    envelope = context.envelope
    assert envelope is not None
    evidence: JSONObject = {'source': 'client', 'envelope_key': envelope.key_id}
    if context.keys is None or context.conversation_id is None or context.scope is None:
        evidence['reason'] = 'no_keys_or_ids'
        return GateResult('authority', False, ('UNTRUSTED_HISTORY',), evidence)
    check = verify_history(
        facts.messages,
        envelope,
        conversation_id=context.conversation_id,
        scope=context.scope,
        keys=context.keys,
        now=facts.now,
    )
    if not check.ok:
        evidence.update(reason=check.reason, index=check.index)
        return GateResult('authority', False, ('UNTRUSTED_HISTORY',), evidence)
    evidence.update(signed=envelope.count, added=check.added)
    return GateResult('authority', True, (), evidence)


def _standing_prompt(messages: list[ModelMessage]) -> tuple[str | None, int]:
    for message in messages:
        if isinstance(message, ModelRequest):
            texts = []
            for part in message.parts:
                if not isinstance(part, SystemPromptPart) or part.scope == 'request':
                    break
                texts.append(part.content)
            return ('\n\n'.join(texts) if texts else None), len(texts)
    return None, 0


def gate_prompt(facts: Facts, context: AuditContext) -> GateResult:
    """The history's standing system prompt is the one the contract requires."""
    contract = context.prompt_contract
    assert contract is not None
    text, parts = _standing_prompt(facts.messages)
    evidence: JSONObject = {'contract': contract.name, 'kind': contract.kind, 'standing_parts': parts}
    if contract.kind == 'unchecked':
        return GateResult('prompt_continuity', True, (), {**evidence, 'found': 'not checked'})
    if contract.kind == 'dynamic_instructions':
        return GateResult('prompt_continuity', text is None, () if text is None else ('SYSTEM_PROMPT_GAP',), evidence)
    if text is None:
        evidence['found'] = 'none'
        return GateResult('prompt_continuity', False, ('SYSTEM_PROMPT_GAP',), evidence)
    ok = keyed_hash(facts.key, text, 64) == contract.digest
    evidence['found'] = 'match' if ok else 'different'
    return GateResult('prompt_continuity', ok, () if ok else ('SYSTEM_PROMPT_GAP',), evidence)


def _valid_waits(facts: Facts) -> list[WaitRecord]:
    return [w for w in facts.waits if w.resolved_at is None and w.deadline > facts.now]


def gate_tools(facts: Facts, context: AuditContext) -> GateResult:
    """Every call has a real result: no open call, no synthesized `interrupted` return, no result
    without its call. Calls held by a valid wait record, and a live frontier the caller means to
    run, are not failures."""
    messages = facts.messages
    report = pairing_report(messages)
    last_response = max((i for i, m in enumerate(messages) if isinstance(m, ModelResponse)), default=-1)
    frontier_ok = context.resume_frontier or bool(_valid_waits(facts))
    interrupted: list[JSONObject] = []
    for ref in report.open_calls:
        if ref.message_index == last_response and frontier_ok:
            continue
        interrupted.append(_call_evidence(facts, ref.message_index, ref.tool_call_id, 'open'))
    for ref in report.synthesized_returns:
        interrupted.append(_call_evidence(facts, ref.message_index, ref.tool_call_id, 'synthesized_return'))
    orphans = [
        {'position': r.message_index, 'part': r.part_index, 'tool_call': facts.h(r.tool_call_id)}
        for r in report.orphaned_results
    ]
    verdicts = []
    if interrupted:
        verdicts.append('INTERRUPTED_TOOL')
    if orphans:
        verdicts.append('ORPHAN_RESULT_REMOVED')
    evidence: JSONObject = {'calls': sum(isinstance(p, ToolCallPart) for m in messages for p in m.parts)}
    if interrupted:
        evidence['interrupted'] = interrupted
    if orphans:
        evidence['orphans'] = orphans
    return GateResult('tool_honesty', not verdicts, tuple(verdicts), evidence)


def _call_evidence(facts: Facts, position: int, call_id: str, state: str) -> JSONObject:
    tool_name = next(
        (
            p.tool_name
            for m in facts.messages
            for p in m.parts
            if isinstance(p, (ToolCallPart, ToolReturnPart)) and p.tool_call_id == call_id
        ),
        None,
    )
    effect = facts.effects.get(call_id)
    out: JSONObject = {'position': position, 'tool_call': facts.h(call_id), 'tool': tool_name, 'state': state}
    if effect is not None:
        out['ledger'] = effect.status if effect.status != 'started' else 'unknown_after_crash'
        out['idempotency_key'] = facts.h(effect.idempotency_key)
    return out


def gate_scope(facts: Facts, context: AuditContext) -> GateResult:
    """Every message belongs to the conversation being continued (a fork's shared prefix may carry
    its parent's id); loaded and replayed under one scope; no run id used as the conversation key;
    a declared fork really has a new id."""
    problems: list[JSONObject] = []
    if context.loaded_scope is not None and context.scope is not None and context.loaded_scope != context.scope:
        problems.append({'problem': 'scope_changed'})
    target = context.conversation_id
    run_ids = {m.run_id for m in facts.messages if m.run_id}
    if target is not None and target in run_ids:
        problems.append({'problem': 'run_id_as_conversation_key'})
    if context.fork_of is not None and (target is None or target == context.fork_of):
        problems.append({'problem': 'fork_kept_parent_id'})
    if not context.merge:
        allowed_by_position = _allowed_ids(facts, target)
        for index, message in enumerate(facts.messages):
            cid = message.conversation_id
            if cid is not None and cid not in allowed_by_position(index):
                problems.append({'problem': 'foreign_conversation_id', 'position': index, 'id': facts.h(cid)})
                break
    ids = {m.conversation_id for m in facts.messages if m.conversation_id}
    evidence: JSONObject = {'distinct_conversation_ids': len(ids)}
    if problems:
        evidence['problems'] = problems
    return GateResult('scope', not problems, () if not problems else ('SCOPE_DRIFT',), evidence)


def _allowed_ids(facts: Facts, target: str | None) -> Callable[[int], set[str | None]]:
    if target is None:
        first = next((m.conversation_id for m in facts.messages if m.conversation_id), None)
        target = first
    lineage = facts.lineage
    offset = facts.stored.offset if facts.stored is not None else 0

    def allowed(index: int) -> set[str | None]:
        position = index + offset
        ids: set[str | None] = {target}
        for owner, start, end in lineage:
            if start <= position < end:
                ids.add(owner)
        return ids

    return allowed


def gate_outcome(facts: Facts, context: AuditContext) -> tuple[GateResult, bool]:
    """A history that ends with the model's answer has a receipt for that run's outcome (of an
    accepted strength), or a valid wait record, when an outcome is owed (see `_expectation`); the
    expected progress window must not have closed without one. A run that owes none passes with
    `expected: 'none'` in the evidence. Returns the gate and whether a valid wait holds the run open."""
    messages = facts.messages
    last = messages[-1] if messages else None
    waits = _valid_waits(facts)
    expired = [w for w in facts.waits if w.resolved_at is None and w.deadline <= facts.now]
    evidence: JSONObject = {'receipts': len(facts.receipts), 'valid_waits': len(waits)}
    if expired and not waits:
        evidence['expired_waits'] = len(expired)
        return GateResult('outcome', False, ('BLOCKED',), evidence), False
    if not isinstance(last, ModelResponse):
        return GateResult('outcome', True, (), evidence), bool(waits)
    if any(isinstance(p, ToolCallPart) for p in last.parts):
        # Paused on tool calls (approval, external execution): fine while the window is open, or
        # while a wait record says who owes the decision; past the window with neither, BLOCKED.
        if not waits and _window_closed(last, context, facts.now):
            evidence['pending_calls'] = sum(isinstance(p, ToolCallPart) for p in last.parts)
            evidence['progress_window'] = 'closed'
            return GateResult('outcome', False, ('BLOCKED',), evidence), False
        return GateResult('outcome', True, (), evidence), bool(waits)
    run_id = last.run_id
    accepted = [r for r in facts.receipts if r.run_id == run_id and r.strength in context.accepted_strengths]
    recorded = [r for r in facts.receipts if r.run_id == run_id]
    evidence['run'] = facts.h(run_id)
    if accepted:
        evidence['strength'] = accepted[-1].strength
        return GateResult('outcome', True, (), evidence), False
    expected = _expectation(facts, context, run_id, bool(recorded))
    if expected is None:
        # An ordinary answer with no effect anyone expected: nothing is owed, so nothing is missing.
        evidence['expected'] = 'none'
        return GateResult('outcome', True, (), evidence), bool(waits)
    evidence['expected'] = expected
    if recorded:
        evidence['weaker_receipts'] = sorted({r.strength for r in recorded})
    if waits:
        return GateResult('outcome', True, (), evidence), True
    if _window_closed(last, context, facts.now):
        evidence['progress_window'] = 'closed'
        return GateResult('outcome', False, ('BLOCKED',), evidence), False
    return GateResult('outcome', False, ('MISSING_OUTCOME_RECEIPT',), evidence), False


def _expectation(facts: Facts, context: AuditContext, run_id: str | None, recorded: bool) -> str | None:
    """Why the last run owes an outcome receipt, or None when it owes none. Rules, first match:
    - `'declared'`: the application declared an expected outcome (`AuditContext.expect_outcome`);
    - `'receipt'`: someone recorded a receipt for the run (of a strength not accepted), so an
      effect was expected of it;
    - `'effect_tool'`: the run called a tool marked as having external effects
      (`AuditContext.effect_tools`), in its messages or in the ledger."""
    if context.expect_outcome:
        return 'declared'
    if recorded:
        return 'receipt'
    marked = set(context.effect_tools)
    if not marked:
        return None
    called = {
        p.tool_name
        for m in facts.messages
        if isinstance(m, ModelResponse) and m.run_id == run_id
        for p in m.parts
        if isinstance(p, ToolCallPart)
    }
    called.update(e.tool_name for e in facts.effects.values() if e.run_id == run_id)
    return 'effect_tool' if called & marked else None


def _window_closed(last: ModelResponse, context: AuditContext, now: datetime) -> bool:
    window = context.progress_window
    stamp = last.timestamp if last.timestamp.tzinfo else last.timestamp.replace(tzinfo=UTC)
    return window is not None and now > stamp + window
