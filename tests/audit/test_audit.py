"""The replay audit: the seven cases of 004, each gate alone, precedence, records, and no content."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from threadline import Agent, ModelMessagesTypeAdapter, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserError
from threadline.audit import (
    AuditContext,
    PromptContract,
    ReplayGate,
    ReplayRefused,
    audit_events_from_sanitize,
    audit_history,
    reconcile_tool_call,
)
from threadline.audit.cases import SCOPE, SYSTEM_PROMPT, _turn, build_cases
from threadline.messages import SystemPromptPart, ToolReturnPart, UserPromptPart, sanitize_report
from threadline.models.test import TestModel
from threadline.storage import FileStore, MemoryStore, SQLiteStore, StepPersistence

KEY = b'test-audit-key'
NOW = datetime(2025, 6, 1, tzinfo=UTC)


@pytest.fixture(params=['memory', 'sqlite', 'file'])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    if request.param == 'memory':
        return MemoryStore()
    if request.param == 'sqlite':
        return SQLiteStore(tmp_path / 'audit.db')
    return FileStore(tmp_path / 'files')


def contract() -> PromptContract:
    return PromptContract.for_text(SYSTEM_PROMPT, name='support-v3', key=KEY)


def context(store: Any, cid: str, **kwargs: Any) -> AuditContext:
    return AuditContext(
        source='store',
        store=store,
        scope=SCOPE,
        conversation_id=cid,
        prompt_contract=contract(),
        key=KEY,
        now=NOW,
        **kwargs,
    )


def test_the_seven_cases_and_the_extra_ones(store: Any) -> None:
    cases = build_cases(store, key=KEY, now=NOW)
    assert len(cases) == 10
    for case in cases:
        assert case.round_trip_equal, case.name  # every JSON round trip matches...
        report = audit_history(case.history, case.context)
        assert report.verdict == case.expected, (case.name, report.failures)  # ...only one is READY
        assert report.gate('serialization').passed, case.name
    table = {c.name: audit_history(c.history, c.context).verdict for c in cases[:7]}
    assert list(table.values()).count('READY') == 1


def test_precedence_lists_every_failure_in_order(store: Any) -> None:
    cases = {c.name: c for c in build_cases(store, key=KEY, now=NOW)}
    both = cases['Two failures: client history without system prompt']
    report = audit_history(both.history, both.context)
    assert report.failures[:2] == ('UNTRUSTED_HISTORY', 'SYSTEM_PROMPT_GAP')
    mixed = _turn('p1', 'r1', system=False, call='refund', answered=False) + _turn('other', 'r2', t=1)
    store.sync.append('p1', mixed, scope=SCOPE)
    report = audit_history(store.sync.load('p1', scope=SCOPE), context(store, 'p1', expect_outcome=True))
    assert report.failures == ('SCOPE_DRIFT', 'SYSTEM_PROMPT_GAP', 'INTERRUPTED_TOOL', 'MISSING_OUTCOME_RECEIPT')
    assert report.verdict == 'SCOPE_DRIFT'


def test_serialization_gate_alone() -> None:
    ctx = AuditContext(source='client', prompt_contract=contract(), key=KEY, now=NOW)
    for junk in (b'', b'not json', b'{"kind": "request"}', b'[{"kind": "nope", "parts": []}]', bytes(range(256))):
        report = audit_history(junk, ctx)
        assert report.verdict == 'SERIALIZATION_FAILURE' and report.failures == ('SERIALIZATION_FAILURE',)
        assert 'error' in report.gate('serialization').evidence
    legacy = json.dumps(
        [
            {
                'kind': 'response',
                'parts': [{'part_kind': 'text', 'content': 'x'}],
                'timestamp': '2025-01-01T00:00:00+00:00',
                'vendor_id': 'v1',
            }
        ]
    )
    report = audit_history(legacy, ctx)  # loads, but writes back differently: not the same canonical form
    assert report.gate('serialization').passed is False
    assert audit_history(42, ctx).verdict == 'SERIALIZATION_FAILURE'


def test_chain_tampering_fails_serialization(tmp_path: Any) -> None:
    import sqlite3

    path = tmp_path / 't.db'
    store = SQLiteStore(path)
    store.sync.append('t1', _turn('t1', 'r1'), scope=SCOPE)
    store.sync.record_outcome('t1', scope=SCOPE, run_id='r1', expected_effect='x')
    with sqlite3.connect(path) as raw:
        body = raw.execute('SELECT body FROM messages WHERE position = 3').fetchone()[0]
        raw.execute(
            'UPDATE messages SET body = ? WHERE position = 3', (body.replace('refund issued', 'refund denied'),)
        )
    report = audit_history(store.sync.load('t1', scope=SCOPE), context(store, 't1'))
    assert (
        report.verdict == 'SERIALIZATION_FAILURE'
        and report.gate('serialization').evidence['chain'] == 'a stored message changed'
    )


def test_authority_gate_alone(store: Any) -> None:
    messages = _turn('a1', 'r1')
    store.sync.append('a1', messages, scope=SCOPE, provenance='client')
    store.sync.record_outcome('a1', scope=SCOPE, run_id='r1', expected_effect='x')
    report = audit_history(store.sync.load('a1', scope=SCOPE), context(store, 'a1'))
    assert report.failures == ('UNTRUSTED_HISTORY',) and report.gate('authority').evidence['client_batches'] == [(0, 4)]
    store.sync.append('a2', _turn('a2', 'r2'), scope=SCOPE)
    store.sync.record_outcome('a2', scope=SCOPE, run_id='r2', expected_effect='x')
    doctored = _turn('a2', 'r2')
    doctored[3] = ModelResponse(
        parts=[TextPart('something else')],
        timestamp=doctored[3].timestamp,
        run_id='r2',
        conversation_id='a2',
        model_name='demo',
    )
    assert audit_history(doctored, context(store, 'a2')).failures == ('UNTRUSTED_HISTORY',)  # not what is stored
    assert audit_history(_turn('a2', 'r2'), context(store, 'a2')).verdict == 'READY'


def test_prompt_gate_alone(store: Any) -> None:
    other = _turn('p1', 'r1')
    other[0] = ModelRequest(
        parts=[SystemPromptPart('You are another agent.'), UserPromptPart('hi')], run_id='r1', conversation_id='p1'
    )
    store.sync.append('p1', other, scope=SCOPE)
    store.sync.record_outcome('p1', scope=SCOPE, run_id='r1', expected_effect='x')
    report = audit_history(store.sync.load('p1', scope=SCOPE), context(store, 'p1'))
    assert (
        report.failures == ('SYSTEM_PROMPT_GAP',) and report.gate('prompt_continuity').evidence['found'] == 'different'
    )
    dynamic = context(store, 'p1')
    dynamic.prompt_contract = PromptContract.dynamic('instructions-v2')
    assert audit_history(store.sync.load('p1', scope=SCOPE), dynamic).failures == ('SYSTEM_PROMPT_GAP',)
    store.sync.append('p2', _turn('p2', 'r2', system=False), scope=SCOPE)
    store.sync.record_outcome('p2', scope=SCOPE, run_id='r2', expected_effect='x')
    dynamic.conversation_id = 'p2'
    assert audit_history(store.sync.load('p2', scope=SCOPE), dynamic).verdict == 'READY'


def test_tool_gate_alone_and_the_live_frontier(store: Any) -> None:
    paused = _turn('t1', 'r1', call='refund', answered=False)
    store.sync.append('t1', paused, scope=SCOPE)
    report = audit_history(store.sync.load('t1', scope=SCOPE), context(store, 't1'))
    assert report.failures == ('INTERRUPTED_TOOL',)
    [call] = report.gate('tool_honesty').evidence['interrupted']
    assert (
        call['position'] == 1 and call['tool'] == 'refund' and call['state'] == 'open' and len(call['tool_call']) == 16
    )
    assert (
        audit_history(store.sync.load('t1', scope=SCOPE), context(store, 't1', resume_frontier=True)).verdict == 'READY'
    )


def test_scope_gate_alone(store: Any) -> None:
    store.sync.append('s1', _turn('s1', 'r1'), scope=SCOPE)
    store.sync.record_outcome('s1', scope=SCOPE, run_id='r1', expected_effect='x')
    loaded = store.sync.load('s1', scope=SCOPE)
    assert audit_history(loaded, context(store, 's1', loaded_scope=SCOPE)).verdict == 'READY'
    moved = context(store, 's1', loaded_scope=SCOPE)
    moved.scope = 'another-tenant'
    assert audit_history(loaded, moved).failures == ('SCOPE_DRIFT',)
    assert audit_history(loaded, context(store, 'r1')).gate('scope').passed is False  # a run id as the conversation key
    kept_id = context(store, 's1', fork_of='s1')
    assert audit_history(loaded, kept_id).failures == ('SCOPE_DRIFT',)  # a fork that kept its parent's id
    assert audit_history(loaded, context(store, 's1', merge=True)).verdict == 'READY'


def test_outcome_gate_strengths_waits_and_windows(store: Any) -> None:
    store.sync.append('o1', _turn('o1', 'r1'), scope=SCOPE)
    loaded = store.sync.load('o1', scope=SCOPE)
    ordinary = audit_history(loaded, context(store, 'o1', progress_window=timedelta(hours=1)))
    assert ordinary.verdict == 'READY'  # an answer nobody expected an effect of owes no receipt, however old
    assert ordinary.gate('outcome').evidence['expected'] == 'none'
    declared = audit_history(loaded, context(store, 'o1', expect_outcome=True))
    assert declared.failures == ('MISSING_OUTCOME_RECEIPT',)
    assert declared.gate('outcome').evidence['expected'] == 'declared'
    store.sync.record_outcome('o1', scope=SCOPE, run_id='r1', expected_effect='x', strength='transport')
    assert audit_history(loaded, context(store, 'o1')).failures == ('MISSING_OUTCOME_RECEIPT',)
    assert audit_history(loaded, context(store, 'o1', accepted_strengths=('outcome', 'transport'))).verdict == 'READY'
    late = context(store, 'o1', progress_window=timedelta(hours=1))
    assert audit_history(loaded, late).failures == ('BLOCKED',)
    store.sync.record_wait(
        'o1',
        scope=SCOPE,
        run_id='r1',
        owner='ops',
        decision='confirm',
        deadline=NOW + timedelta(days=1),
        resume_token='tok',
    )
    assert audit_history(loaded, late).verdict == 'WAITING'
    store.sync.resolve_wait('o1', scope=SCOPE, resume_token='tok')
    store.sync.record_wait(
        'o1',
        scope=SCOPE,
        run_id='r1',
        owner='ops',
        decision='confirm',
        deadline=NOW - timedelta(days=1),
        resume_token='old',
    )
    assert audit_history(loaded, context(store, 'o1')).failures == ('BLOCKED',)


def test_a_run_that_called_a_tool_with_external_effects_owes_a_receipt(store: Any) -> None:
    store.sync.append('e1', _turn('e1', 'r1', call='issue_refund'), scope=SCOPE)
    loaded = store.sync.load('e1', scope=SCOPE)
    assert audit_history(loaded, context(store, 'e1', effect_tools={'lookup'})).verdict == 'READY'
    report = audit_history(loaded, context(store, 'e1', effect_tools={'issue_refund'}))
    assert report.failures == ('MISSING_OUTCOME_RECEIPT',)
    assert report.gate('outcome').evidence['expected'] == 'effect_tool'
    store.sync.record_outcome('e1', scope=SCOPE, run_id='r1', expected_effect='refund', strength='outcome')
    assert audit_history(loaded, context(store, 'e1', effect_tools={'issue_refund'})).verdict == 'READY'


def test_effect_tools_of_reads_the_marked_tools_of_either_agent() -> None:
    from pydantic_ai import Agent as PydanticAgent

    from threadline import Agent
    from threadline.audit import effect_tools_of

    for agent in (Agent('test'), PydanticAgent('test')):

        @agent.tool_plain(metadata={'external_effects': True})
        def issue_refund(order: int) -> str:
            return 'done'

        @agent.tool_plain
        def lookup(order: int) -> str:
            return 'shipped'

        assert effect_tools_of(agent) == {'issue_refund'}, type(agent)


def test_missing_context_fields_are_named(store: Any) -> None:
    with pytest.raises(UserError, match='prompt_contract'):
        audit_history([], AuditContext(source='client'))
    with pytest.raises(UserError, match=r"AuditContext\.store is required when source='store'"):
        audit_history([], AuditContext(source='store', prompt_contract=contract(), scope='s', conversation_id='c'))
    with pytest.raises(UserError, match='source'):
        audit_history([], AuditContext(source='browser', prompt_contract=contract()))  # type: ignore[arg-type]


def test_reconcile_closes_an_interrupted_call(store: Any) -> None:
    store.sync.append('r1', _turn('r1', 'run-1', call='issue_refund', answered=False), scope=SCOPE)
    assert audit_history(store.sync.load('r1', scope=SCOPE), context(store, 'r1')).verdict == 'INTERRUPTED_TOOL'
    reconcile_tool_call(
        store, 'r1', 'run-1-call', scope=SCOPE, result='refund made (found at payments)', evidence='payments:refund-42'
    )
    loaded = store.sync.load('r1', scope=SCOPE)
    result = loaded.messages[-1].parts[0]
    assert isinstance(result, ToolReturnPart) and result.metadata == {
        'threadline_reconciled': {'evidence': 'payments:refund-42'}
    }
    report = audit_history(loaded, context(store, 'r1'))
    assert report.gate('tool_honesty').passed and report.verdict == 'READY'  # ends on a request: nothing to receipt yet
    with pytest.raises(UserError, match='already has a real result'):
        reconcile_tool_call(store, 'r1', 'run-1-call', scope=SCOPE, result='x', evidence='y')


async def test_replay_gate_refuses_and_quarantines(store: Any) -> None:
    store.sync.append('g1', _turn('g1', 'r1', call='refund', answered=False), scope=SCOPE)
    loaded = store.sync.load('g1', scope=SCOPE)
    gate = ReplayGate(lambda ctx: context(store, ctx.conversation_id), quarantine=True)
    agent = Agent(TestModel(), capabilities=[gate])
    with pytest.raises(ReplayRefused, match='INTERRUPTED_TOOL') as info:
        await agent.run('continue', **loaded.run_kwargs())
    assert 'query the destination' in str(info.value)
    assert store.sync.load('g1', scope=SCOPE).quarantined['verdict'] == 'INTERRUPTED_TOOL'
    store.sync.append('g2', _turn('g2', 'r2'), scope=SCOPE)
    store.sync.record_outcome('g2', scope=SCOPE, run_id='r2', expected_effect='x')
    ok = await agent.run('thanks', **store.sync.load('g2', scope=SCOPE).run_kwargs())
    assert ok.conversation_id == 'g2' and gate.last_report is not None and gate.last_report.verdict == 'READY'
    assert (await agent.run('a fresh conversation')).output  # no history: nothing to audit


async def test_no_message_content_anywhere(store: Any, caplog: pytest.LogCaptureFixture) -> None:
    marker = 'ZEBRA-MARKER-7f3a'
    caplog.set_level(logging.DEBUG)
    agent = Agent(
        TestModel(custom_output_text=f'{marker} answer'),
        system_prompt=f'{marker} system',
        capabilities=[StepPersistence(store, scope=SCOPE)],
    )

    @agent.tool_plain
    def lookup(order: str) -> str:
        return f'{marker} tool result for {order}'

    first = await agent.run(f'{marker} question')
    broken = [
        *first.all_messages(),
        ModelRequest(parts=[ToolReturnPart('lookup', f'{marker} orphan', 'ghost')]),
        ModelResponse(parts=[ToolCallPart('lookup', {'order': marker}, f'{marker}-call')], state='interrupted'),
    ]
    store.sync.append(first.conversation_id, broken[len(first.all_messages()) :], scope=SCOPE)
    loaded = store.sync.load(first.conversation_id, scope=SCOPE)
    later = await Agent(TestModel(), capabilities=[StepPersistence(store, scope=SCOPE)]).run(
        f'{marker} again', **loaded.run_kwargs()
    )  # repairs the stored history: audit events get written
    ctx = AuditContext(
        source='store',
        store=store,
        scope=SCOPE,
        conversation_id=first.conversation_id,
        prompt_contract=PromptContract.for_text(f'{marker} system', name='c', key=KEY),
        key=KEY,
        now=NOW,
    )
    reports = [
        audit_history(store.sync.load(first.conversation_id, scope=SCOPE), ctx),
        audit_history(
            ModelMessagesTypeAdapter.dump_json(broken),
            AuditContext(source='client', prompt_contract=contract(), key=KEY),
        ),
    ]
    events = store.sync.audit_events(first.conversation_id, scope=SCOPE)
    assert events and {e.kind for e in events} >= {'orphan_result_removed', 'interrupted_return_synthesized'}
    _, stripped = sanitize_report(later.all_messages())
    everything = [r.to_json() for r in reports] + [
        repr(events),
        repr(audit_events_from_sanitize(stripped, conversation_id='c')),
    ]
    everything.append(caplog.text)
    for text in everything:
        assert marker not in text


def test_sanitizing_a_loaded_history_records_content_free_events(store: Any) -> None:
    from threadline.audit import sanitize_loaded

    store.sync.append('z1', _turn('z1', 'r1'), scope=SCOPE)
    client_copy = _turn('z1', 'r1')  # carries the system prompt: a client must not
    sanitized = sanitize_loaded(store, 'z1', client_copy, scope=SCOPE)
    assert not any(isinstance(p, SystemPromptPart) for m in sanitized for p in m.parts)
    events = store.sync.audit_events('z1', scope=SCOPE)
    assert [(e.kind, e.position) for e in events] == [('sanitize:system_prompt', 0)]
    assert SYSTEM_PROMPT not in repr(events)


def test_an_unknown_receipt_strength_is_refused_and_nothing_is_stored(store: Any) -> None:
    from threadline.exceptions import UserError

    store.sync.append('s1', _turn('s1', 'r1'), scope=SCOPE)
    with pytest.raises(UserError, match=r"strength must be one of \('outcome', 'transport', 'activity'\), not 'vibes'"):
        store.sync.record_outcome('s1', scope=SCOPE, run_id='r1', expected_effect='x', strength='vibes')
    assert store.sync.outcomes('s1', scope=SCOPE) == []


async def test_no_content_in_errors_spans_ledger_or_warnings(store: Any) -> None:
    """Exceptions, retries, load failures and warnings leave no message content where content
    was not asked for: the marker a tool's error carries reaches neither spans nor the store."""
    import warnings

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from threadline.capabilities import Instrumentation
    from threadline.exceptions import ModelRetry
    from threadline.messages import ImageUrl, sanitize_messages

    marker = 'ZEBRA-CARD-4111'
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = Agent(
        TestModel(),
        capabilities=[StepPersistence(store, scope=SCOPE), Instrumentation(tracer_provider=provider)],
    )
    attempts: list[int] = []

    @agent.tool_plain
    def charge(order: str) -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise ModelRetry(f'retry: {marker} is busy')
        raise ValueError(f'card {marker} declined')

    with pytest.raises(ValueError, match=marker):  # the caller still gets the real error
        await agent.run('charge it')
    [stored] = store.sync.list(SCOPE)
    runs = store.sync.list_runs(stored.conversation_id, scope=SCOPE)
    records = [repr(store.sync.list_events(r.run_id, scope=SCOPE)) for r in runs]
    records += [repr(store.sync.tool_effects(r.run_id, scope=SCOPE)) for r in runs]
    records += [repr((s.events, s.attributes, s.status.description)) for s in exporter.get_finished_spans()]
    assert any('ValueError' in r for r in records)  # the error is recorded, by type
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        sanitize_messages([ModelRequest(parts=[UserPromptPart([ImageUrl(f'{marker.lower()}://x/a.png')])])])
    records += [str(w.message) for w in caught]
    bad = json.dumps([{'kind': 'request', 'parts': [], 'state': f'pay with {marker}'}])
    records.append(audit_history(bad, AuditContext(source='client', prompt_contract=contract(), key=KEY)).to_json())
    for text in records:
        assert marker not in text and marker.lower() not in text, text[:200]


def test_a_run_paused_for_approval_without_a_wait_is_blocked_once_its_window_closes(store: Any) -> None:
    paused = [
        *_turn('p1', 'r1', call=None, answer=False),
        ModelResponse(
            parts=[ToolCallPart('issue_refund', {'order': 42}, 'approve-me')],
            timestamp=NOW - timedelta(hours=3),
            run_id='r1',
            conversation_id='p1',
        ),
    ]
    store.sync.append('p1', paused, scope=SCOPE)
    loaded = store.sync.load('p1', scope=SCOPE)
    within = context(store, 'p1', progress_window=timedelta(days=1))
    assert 'BLOCKED' not in audit_history(loaded, within).failures
    closed = context(store, 'p1', progress_window=timedelta(hours=1))
    report = audit_history(loaded, closed)
    assert 'BLOCKED' in report.failures and report.gate('outcome').evidence['pending_calls'] == 1
    store.sync.record_wait(
        'p1',
        scope=SCOPE,
        run_id='r1',
        owner='ops',
        decision='approve refund',
        deadline=NOW + timedelta(days=1),
        resume_token='approval-1',
    )
    assert 'BLOCKED' not in audit_history(loaded, closed).failures
