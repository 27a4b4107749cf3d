"""The seven histories of document 004, plus precedence, fork and wait cases, built live on a store.

Every one of them survives a JSON round trip unchanged; only the first is ready to replay.
`build_cases(store)` writes them into `store` (scope `'cases'`) and returns them with the
context to audit each under and the verdict it must get.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from threadline.audit._context import AuditContext
from threadline.audit._contract import PromptContract, resolve_key
from threadline.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.storage import AsyncStore, SyncStore

__all__ = ['SYSTEM_PROMPT', 'AuditCase', 'build_cases']

SYSTEM_PROMPT = 'You are the ACME support agent. Refunds need an order number.'
SCOPE = 'cases'
T0 = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class AuditCase:
    """One history to audit, how to audit it, and the verdict it must get."""

    name: str
    history: Any
    context: AuditContext
    expected: str
    round_trip_equal: bool


def _turn(
    cid: str,
    run: str,
    *,
    system: bool = True,
    call: str | None = 'lookup',
    answered: bool = True,
    answer: bool = True,
    t: int = 0,
) -> list[ModelMessage]:
    stamp = T0 + timedelta(minutes=t)
    first: list[ModelRequestPart] = [SystemPromptPart(SYSTEM_PROMPT, timestamp=stamp)] if system else []
    first.append(UserPromptPart('Where is order 42, and please refund it.', timestamp=stamp))
    out: list[ModelMessage] = [ModelRequest(parts=first, timestamp=stamp, run_id=run, conversation_id=cid)]
    if call is not None:
        out.append(
            ModelResponse(
                parts=[ToolCallPart(call, {'order': '42'}, f'{run}-call')],
                timestamp=stamp,
                run_id=run,
                conversation_id=cid,
                model_name='demo',
            )
        )
        if answered:
            out.append(
                ModelRequest(
                    parts=[ToolReturnPart(call, 'order 42: shipped', f'{run}-call', timestamp=stamp)],
                    timestamp=stamp,
                    run_id=run,
                    conversation_id=cid,
                )
            )
    if answer and (call is None or answered):
        out.append(
            ModelResponse(
                parts=[TextPart('Order 42 shipped; refund issued.')],
                timestamp=stamp,
                run_id=run,
                conversation_id=cid,
                model_name='demo',
            )
        )
    return out


def _round_trips(messages: list[ModelMessage]) -> bool:
    raw = ModelMessagesTypeAdapter.dump_json(messages)
    return ModelMessagesTypeAdapter.dump_json(ModelMessagesTypeAdapter.validate_json(raw)) == raw


def build_cases(
    store: AsyncStore[SyncStore], *, key: bytes | None = None, now: datetime | None = None
) -> list[AuditCase]:
    """Write every case into `store` and return them in the table's order."""
    key = resolve_key(key, store)
    now = now or datetime.now(tz=UTC)
    contract = PromptContract.for_text(SYSTEM_PROMPT, name='support-v3', key=key)

    def stored(
        cid: str, messages: list[ModelMessage], *, receipt_run: str | None = None, **context: Any
    ) -> tuple[Any, AuditContext]:
        store.sync.append(cid, messages, scope=SCOPE)
        if receipt_run is not None:
            store.sync.record_outcome(
                cid,
                scope=SCOPE,
                run_id=receipt_run,
                expected_effect='refund order 42',
                destination='payments',
                idempotency_key='refund-42',
                observed_revision='rev-7',
                strength='outcome',
            )
        ctx = AuditContext(
            source='store',
            store=store,
            scope=SCOPE,
            conversation_id=cid,
            prompt_contract=contract,
            key=key,
            now=now,
            **context,
        )
        return store.sync.load(cid, scope=SCOPE), ctx

    cases: list[AuditCase] = []

    def add(name: str, history: Any, ctx: AuditContext, expected: str, messages: list[ModelMessage]) -> None:
        cases.append(AuditCase(name, history, ctx, expected, _round_trips(messages)))

    full = _turn('case-full', 'run-full')
    add('Full history plus outcome receipt', *stored('case-full', full, receipt_run='run-full'), 'READY', full)
    bare = _turn('case-prompt', 'run-prompt', system=False)
    add('Missing system prompt', *stored('case-prompt', bare, receipt_run='run-prompt'), 'SYSTEM_PROMPT_GAP', bare)
    open_call = _turn('case-tool', 'run-tool', call='issue_refund', answered=False)
    add('Interrupted tool call', *stored('case-tool', open_call), 'INTERRUPTED_TOOL', open_call)
    orphan = _turn('case-orphan', 'run-orphan', call=None, answer=True)
    orphan.insert(
        1,
        ModelRequest(
            parts=[ToolReturnPart('lookup', 'stale', 'lost-call', timestamp=T0)],
            timestamp=T0,
            run_id='run-orphan',
            conversation_id='case-orphan',
        ),
    )
    orphan.insert(
        1,
        ModelResponse(
            parts=[TextPart('Checking.')],
            timestamp=T0,
            run_id='run-orphan',
            conversation_id='case-orphan',
            model_name='demo',
        ),
    )
    add('Orphan tool result', *stored('case-orphan', orphan, receipt_run='run-orphan'), 'ORPHAN_RESULT_REMOVED', orphan)
    mixed = _turn('case-scope', 'run-scope') + _turn('another-conversation', 'run-foreign', t=1)
    add('Mixed conversation IDs', *stored('case-scope', mixed, receipt_run='run-foreign'), 'SCOPE_DRIFT', mixed)
    unreceipted = _turn('case-receipt', 'run-receipt')
    add(
        'Model response without outcome receipt',
        *stored('case-receipt', unreceipted, expect_outcome=True),  # 004: the app defined the effect before the run
        'MISSING_OUTCOME_RECEIPT',
        unreceipted,
    )
    client = _turn('case-client', 'run-client')
    client_ctx = AuditContext(
        source='client',
        store=store,
        scope=SCOPE,
        conversation_id='case-client',
        prompt_contract=contract,
        key=key,
        now=now,
    )
    add('Client-supplied history', ModelMessagesTypeAdapter.dump_json(client), client_ctx, 'UNTRUSTED_HISTORY', client)

    both = _turn('case-both', 'run-both', system=False)
    both_ctx = AuditContext(
        source='client', scope=SCOPE, conversation_id='case-both', prompt_contract=contract, key=key, now=now
    )
    add('Two failures: client history without system prompt', both, both_ctx, 'UNTRUSTED_HISTORY', both)
    fork_id = store.sync.fork('case-full', scope=SCOPE, new_id='case-fork')
    continued = _turn(fork_id, 'run-fork', system=False, t=2)[1:]
    continued.insert(
        0,
        ModelRequest(
            parts=[UserPromptPart('And order 43?', timestamp=T0)],
            timestamp=T0,
            run_id='run-fork',
            conversation_id=fork_id,
        ),
    )
    fork_history, fork_ctx = stored(fork_id, continued, receipt_run='run-fork', fork_of='case-full')
    add('Fork continued in its own id', fork_history, fork_ctx, 'READY', full + continued)
    paused = _turn('case-wait', 'run-wait', call='issue_refund', answered=False)
    wait_history, wait_ctx = stored('case-wait', paused)
    store.sync.record_wait(
        'case-wait',
        scope=SCOPE,
        run_id='run-wait',
        owner='support-lead',
        decision='approve refund',
        deadline=now + timedelta(hours=4),
        resume_token='resume-case-wait',
    )
    add('Run paused for approval', wait_history, wait_ctx, 'WAITING', paused)
    return cases
