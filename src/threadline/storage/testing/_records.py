"""Conformance tests for the step and audit halves of the contract (mixed into the suite in
`threadline.storage.testing`): run records, events, snapshots, the ledger, receipts, waits,
audit events, quarantine, and that the async face covers every operation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest

from threadline.exceptions import ConversationNotFound
from threadline.messages import RunUsage
from threadline.storage._contract import AuditStore, ConversationStore, StepStore, SyncStore
from threadline.storage._face import AsyncStore, contract_operations
from threadline.storage._records import (
    AuditEvent,
    RunFinish,
    RunLineage,
    SnapshotMark,
    SnapshotRequest,
    StepEvent,
    StepWrite,
    ToolEffect,
)
from threadline.storage.testing._samples import T0, turn

__all__ = ['RecordConformance']


class RecordConformance:
    """Step records and audit records behave the same on every backend."""

    @pytest.fixture
    def store(self) -> Iterator[AsyncStore[SyncStore]]:  # pragma: no cover - replaced by the suite's fixture
        raise NotImplementedError
        yield

    def test_backend_implements_the_whole_contract(self, store: AsyncStore[SyncStore]) -> None:
        for protocol in (ConversationStore, StepStore, AuditStore, SyncStore):
            assert isinstance(store.sync, protocol), protocol.__name__
        declared = {name for name in dir(SyncStore) if not name.startswith('_')} - {'close'}
        assert declared == set(contract_operations())

    def test_step_write_is_one_boundary(self, store: AsyncStore[SyncStore]) -> None:
        event = StepEvent('r1', 'run_started', 0, T0, idempotency_key='e0')
        effect = ToolEffect('r1', 'call-0', 'lookup', 'started', T0, idempotency_key='refund-42')
        revision = store.sync.step_write(
            StepWrite(
                'w1',
                's',
                'r1',
                None,
                messages=turn(0, conversation_id='w1', run_id='r1'),
                events=[event],
                snapshot=SnapshotMark('complete', 1, 'snap-0'),
                effects=[effect],
                register=True,
            )
        )
        assert store.sync.conversation_state('w1', scope='s') == (revision, 4)
        assert store.sync.conversation_state('w1', scope='other') is None
        assert [e.kind for e in store.sync.list_events('r1', scope='s')] == ['run_started']
        [snapshot] = store.sync.list_snapshots('r1', scope='s')
        assert (snapshot.position, snapshot.state, snapshot.step_index) == (4, 'complete', 1)
        assert (
            store.sync.load_at('w1', scope='s', branch_id=snapshot.branch_id, position=2)
            == turn(0, conversation_id='w1', run_id='r1')[:2]
        )
        assert [(e.tool_call_id, e.status) for e in store.sync.tool_effects('r1', scope='s')] == [('call-0', 'started')]
        assert [e.idempotency_key for e in store.sync.tool_effects_for_conversation('w1', scope='s')] == ['refund-42']
        later = ToolEffect('r1', 'call-1', 'lookup', 'completed', T0)
        store.sync.record_tool_effect(later, conversation_id='w1', scope='s')
        started = store.sync.tool_effects_for_conversation('w1', scope='s', status='started')
        assert [e.tool_call_id for e in started] == ['call-0']  # only the unresolved ones, when asked
        assert len(store.sync.tool_effects_for_conversation('w1', scope='s')) == 2
        usage = RunUsage(requests=1, input_tokens=7)
        finished = store.sync.step_write(
            StepWrite('w1', 's', 'r1', revision, finish=RunFinish('r1', 'completed', '"ok"', usage))
        )
        run = store.sync.get_run('r1', scope='s')
        assert run is not None and (run.status, run.output_json) == ('completed', '"ok"')
        assert finished == revision + 1 and store.sync.load('w1', scope='s').usage.input_tokens == 7

    def test_run_records_and_snapshots_outside_a_boundary(self, store: AsyncStore[SyncStore]) -> None:
        store.sync.append('w2', turn(0, conversation_id='w2'), scope='s')
        store.sync.register_run('r2', conversation_id='w2', scope='s', model_name='test')
        store.sync.append_event(
            StepEvent('r2', 'run_started', 0, T0, idempotency_key='k'), conversation_id='w2', scope='s'
        )
        snapshot = store.sync.save_snapshot(SnapshotRequest('r2', 'w2', 's', SnapshotMark('interrupted', 2)))
        assert (snapshot.position, snapshot.state) == (4, 'interrupted')
        assert store.sync.list_snapshots('r2', scope='s') == [snapshot]
        store.sync.finish_run(RunFinish('r2', 'failed'), scope='s')
        assert [(r.run_id, r.status) for r in store.sync.list_runs('w2', scope='s')] == [('r2', 'failed')]
        assert [e.run_id for e in store.sync.list_events('r2', scope='s')] == ['r2']
        with pytest.raises(ConversationNotFound):
            store.sync.save_snapshot(SnapshotRequest('r2', 'w2', 'other', SnapshotMark('complete', 3)))

    def test_run_lineage_and_finding_runs(self, store: AsyncStore[SyncStore]) -> None:
        parent = RunLineage(agent_name='planner', metadata={'team': 'ops'}, registration_id='reg-1')
        store.sync.step_write(StepWrite('l1', 's', 'orchestrator', None, register=True, lineage=parent))
        child = RunLineage(parent_run_id='orchestrator', agent_name='reader')
        store.sync.step_write(StepWrite('l2', 's', 'delegate', None, register=True, lineage=child))
        store.sync.step_write(StepWrite('l3', 's', 'plain', None, register=True))
        store.sync.step_write(StepWrite('l4', 'other', 'stranger', None, register=True, lineage=child))
        run = store.sync.get_run('orchestrator', scope='s')
        assert run is not None and (run.agent_name, run.metadata, run.registration_id) == (
            'planner',
            {'team': 'ops'},
            'reg-1',
        )
        plain = store.sync.get_run('plain', scope='s')
        assert plain is not None and (plain.parent_run_id, plain.agent_name, plain.metadata) == (None, None, {})
        # another scope's delegate of the same parent id is not among this scope's
        assert [r.run_id for r in store.sync.find_runs(scope='s', parent_run_id='orchestrator')] == ['delegate']
        assert {r.run_id for r in store.sync.find_runs(scope='s')} == {'orchestrator', 'delegate', 'plain'}
        assert [r.run_id for r in store.sync.find_runs(scope='s', conversation_id='l2')] == ['delegate']
        assert store.sync.find_runs(scope='s', conversation_id='l4') == []
        assert store.sync.find_runs(scope='s', parent_run_id='orchestrator', conversation_id='l1') == []
        assert [r.run_id for r in store.sync.find_runs(scope='other', parent_run_id='orchestrator')] == ['stranger']

    def test_a_snapshot_keeps_what_the_log_has_not_got(self, store: AsyncStore[SyncStore]) -> None:
        messages = turn(0, conversation_id='p1', run_id='rp')
        mark = SnapshotMark('complete', 1, 'after-tools', pending=messages[2:3])
        store.sync.step_write(StepWrite('p1', 's', 'rp', None, messages=messages[:2], snapshot=mark, register=True))
        [snapshot] = store.sync.list_snapshots('rp', scope='s')
        assert (snapshot.position, snapshot.pending) == (2, tuple(messages[2:3]))
        assert store.sync.load('p1', scope='s').messages == messages[:2]  # the log has not got it
        assert store.sync.verify('p1', scope='s').ok
        at = store.sync.load_at('p1', scope='s', branch_id=snapshot.branch_id, position=snapshot.position)
        assert [*at, *snapshot.pending] == messages[:3]

    def test_events_without_a_key_are_all_kept(self, store: AsyncStore[SyncStore]) -> None:
        events = [StepEvent('r9', 'run_started', 0, T0), StepEvent('r9', 'run_started', 0, T0)]
        store.sync.step_write(StepWrite('w9', 's', 'r9', None, events=events, register=True))
        keyed = StepEvent('r9', 'run_completed', 1, T0, idempotency_key='done')
        store.sync.step_write(StepWrite('w9', 's', 'r9', None, events=[keyed, keyed]))
        assert [e.kind for e in store.sync.list_events('r9', scope='s')] == [
            'run_started',
            'run_started',
            'run_completed',
        ]

    def test_ledger_row_moves_on_and_keeps_its_key(self, store: AsyncStore[SyncStore]) -> None:
        store.sync.append('w3', turn(0, conversation_id='w3'), scope='s')
        started = ToolEffect('r3', 'call-1', 'refund', 'started', T0, idempotency_key='key-1')
        store.sync.record_tool_effect(started, conversation_id='w3', scope='s')
        done = ToolEffect('r3', 'call-1', 'refund', 'completed', T0, ended_at=T0 + timedelta(seconds=1))
        store.sync.record_tool_effect(done, conversation_id='w3', scope='s')
        [row] = store.sync.tool_effects('r3', scope='s')
        assert (row.status, row.idempotency_key) == ('completed', 'key-1')

    def test_run_start_reads_what_a_run_checks(self, store: AsyncStore[SyncStore]) -> None:
        assert store.sync.run_start('w8', scope='s') is None
        history = turn(0, conversation_id='w8', run_id='r8') + turn(1, conversation_id='w8', run_id='r8')
        store.sync.append('w8', history[:4], scope='s')
        revision = store.sync.append('w8', history[4:], scope='s')
        for effect in (
            ToolEffect('r8', 'call-a', 'lookup', 'completed', T0, T0),
            ToolEffect('r8', 'call-b', 'refund', 'started', T0 + timedelta(seconds=1), idempotency_key='k-b'),
            ToolEffect('r8', 'call-c', 'lookup', 'failed', T0, T0),
        ):
            store.sync.record_tool_effect(effect, conversation_id='w8', scope='s')
        start = store.sync.run_start('w8', scope='s')
        assert start is not None
        assert (start.revision, start.length, start.tip, start.quarantined) == (revision, 8, history[-1], None)
        assert [(e.tool_call_id, e.idempotency_key) for e in start.unresolved] == [('call-b', 'k-b')]
        assert store.sync.run_start('w8', scope='other') is None  # another scope's conversation: not found
        fork = store.sync.fork('w8', scope='s', at=3)  # the tip of a fork that has written nothing of its own
        forked = store.sync.run_start(fork, scope='s')
        assert forked is not None and (forked.length, forked.tip, forked.unresolved) == (3, history[2], [])
        store.sync.quarantine('w8', scope='s', report={'verdict': 'UNTRUSTED_HISTORY'})
        quarantined = store.sync.run_start('w8', scope='s')
        assert quarantined is not None and quarantined.quarantined == {'verdict': 'UNTRUSTED_HISTORY'}

    def test_audit_records_round_trip_and_respect_scope(self, store: AsyncStore[SyncStore]) -> None:
        store.sync.append('w4', turn(0, conversation_id='w4'), scope='s')
        key = store.sync.audit_key()
        assert isinstance(key, bytes) and key and store.sync.audit_key() == key
        receipt = store.sync.record_outcome(
            'w4', scope='s', run_id='r4', expected_effect='refund', strength='transport'
        )
        assert store.sync.outcomes('w4', scope='s') == [receipt]
        deadline = T0 + timedelta(days=1)
        store.sync.record_wait(
            'w4', scope='s', run_id='r4', owner='ops', decision='approve', deadline=deadline, resume_token='t1'
        )
        store.sync.resolve_wait('w4', scope='s', resume_token='t1')
        [wait] = store.sync.waits('w4', scope='s')
        assert (wait.owner, wait.deadline, wait.resolved_at is not None) == ('ops', deadline, True)
        event = AuditEvent('w4', 'dangling_call_removed', 'hash', 3, T0)
        store.sync.record_audit_events('w4', [event], scope='s')
        assert store.sync.audit_events('w4', scope='s') == [event]
        store.sync.quarantine('w4', scope='s', report={'verdict': 'UNTRUSTED_HISTORY'})
        assert store.sync.load('w4', scope='s').quarantined == {'verdict': 'UNTRUSTED_HISTORY'}
        store.sync.quarantine('w4', scope='s', report=None)
        assert store.sync.load('w4', scope='s').quarantined is None
        calls: list[Callable[[], object]] = [
            lambda: store.sync.outcomes('w4', scope='other'),
            lambda: store.sync.waits('w4', scope='other'),
            lambda: store.sync.audit_events('w4', scope='other'),
            lambda: store.sync.record_outcome('w4', scope='other', run_id=None, expected_effect='x'),
        ]
        for call in calls:
            with pytest.raises(ConversationNotFound):
                call()

    def test_lineage_branches_and_raw_history(self, store: AsyncStore[SyncStore]) -> None:
        revision = store.sync.append('w5', turn(0, conversation_id='w5'), scope='s')
        store.sync.replace('w5', turn(0, conversation_id='w5')[:2], scope='s', expected_revision=revision)
        assert [length for _, length in store.sync.branches('w5', scope='s')] == [4, 2]
        assert store.sync.lineage('w5', scope='s') == [('w5', 0, 2)]
        fork = store.sync.fork('w5', scope='s', at=1)
        assert store.sync.lineage(fork, scope='s') == [('w5', 0, 1)]
        raw = store.sync.raw_history('w5', scope='s')
        assert raw.startswith(b'[') and raw.count(b'"kind"') >= 2

    def test_every_operation_has_an_async_form(self, store: AsyncStore[SyncStore]) -> None:
        async def main() -> None:
            await store.append('w6', turn(0, conversation_id='w6'), scope='s')
            await store.register_run('r6', conversation_id='w6', scope='s')
            await store.finish_run(RunFinish('r6', 'completed', '1'), scope='s')
            run = await store.get_run('r6', scope='s')
            assert run is not None and run.status == 'completed'
            assert (await store.audit_key()) == store.sync.audit_key()
            assert await store.conversation_state('w6', scope='s') == store.sync.conversation_state('w6', scope='s')

        asyncio.run(main())
        for name in contract_operations():
            assert asyncio.iscoroutinefunction(getattr(store, name)), name
