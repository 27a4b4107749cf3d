"""Conformance suite for conversation stores: subclass it in your tests and provide `make_store`.

    class TestMyStore(ConversationStoreConformance):
        def make_store(self):
            return AsyncStore(MyBackend(...))

This is how to check your own backend: implement the `SyncStore` Protocol (the single definition
of every operation), wrap it with `AsyncStore(...)`, and run this suite against it. Each test is a
behaviour a user of the store relies on: revisions, scopes, forks, deletion, retention, search,
windows, the hash chain, run records, events, snapshots, the tool-effect ledger, the audit's
receipts, waits, events and quarantine, Memory's notebooks, and both faces. Needs pytest.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from threadline.exceptions import ConflictError, ConversationNotFound, UserError
from threadline.messages import ModelRequest, ToolCallPart, ToolReturnPart, UserPromptPart
from threadline.storage._contract import SyncStore
from threadline.storage._face import AsyncStore
from threadline.storage._records import EVERY_SCOPE
from threadline.storage.testing._leases import LeaseConformance, ScopeCountConformance
from threadline.storage.testing._notebooks import NotebookConformance
from threadline.storage.testing._records import RecordConformance
from threadline.storage.testing._samples import T0, SampleResult, turn
from threadline.storage.testing._scope import ScopeConformance

__all__ = ['ConversationStoreConformance', 'turn']


class ConversationStoreConformance(
    RecordConformance, ScopeConformance, NotebookConformance, LeaseConformance, ScopeCountConformance
):
    """Behaviours every store must have, over the whole contract. Override `make_store` to return
    your backend wrapped in its async face (`AsyncStore(MyBackend(...))`, or a ready-made store)."""

    def make_store(self) -> AsyncStore[SyncStore]:  # pragma: no cover - provided by the subclass
        raise NotImplementedError

    @pytest.fixture
    def store(self) -> Iterator[AsyncStore[SyncStore]]:
        store = self.make_store()
        yield store
        store.close()

    def test_append_load_round_trip(self, store: AsyncStore[SyncStore]) -> None:
        rev1 = store.sync.append('c1', turn(0, conversation_id='c1'), scope='s')
        rev2 = store.sync.append('c1', turn(1, conversation_id='c1'), scope='s', expected_revision=rev1)
        assert rev2 == rev1 + 1
        loaded = store.sync.load('c1', scope='s')
        assert loaded.messages == turn(0, conversation_id='c1') + turn(1, conversation_id='c1')
        assert (loaded.revision, loaded.length, loaded.offset) == (rev2, 8, 0)
        assert [(b.start, b.end, b.provenance) for b in loaded.batches] == [(0, 4, 'server'), (4, 8, 'server')]
        assert loaded.title == 'hello question 0'

    def test_save_records_run_and_usage_once(self, store: AsyncStore[SyncStore]) -> None:
        result = SampleResult(turn(0, conversation_id='c2', run_id='r0'), 'r0', 'c2')
        revision = store.sync.save(result, scope='s')
        assert store.sync.save(result, scope='s') == revision  # saving again adds nothing
        loaded = store.sync.load('c2', scope='s')
        assert len(loaded.messages) == 4 and loaded.usage.requests == 2 and loaded.usage.input_tokens == 20
        assert loaded.run_kwargs()['conversation_id'] == 'c2'
        [run] = store.sync.list_runs('c2', scope='s')
        assert run.run_id == 'r0' and run.status == 'completed' and run.usage is not None and run.usage.tool_calls == 1

    def test_stale_revision_conflicts_and_writes_nothing(self, store: AsyncStore[SyncStore]) -> None:
        revision = store.sync.append('c3', turn(0, conversation_id='c3'), scope='s')
        store.sync.append('c3', turn(1, conversation_id='c3'), scope='s', expected_revision=revision)
        with pytest.raises(ConflictError) as info:
            store.sync.append('c3', turn(2, conversation_id='c3'), scope='s', expected_revision=revision)
        assert (info.value.expected, info.value.actual) == (revision, revision + 1)
        assert store.sync.load('c3', scope='s').length == 8

    def test_concurrent_appends_never_interleave(self, store: AsyncStore[SyncStore]) -> None:
        store.sync.append('c4', [], scope='s')
        errors: list[BaseException] = []

        def writer(k: int) -> None:
            try:
                for i in range(5):
                    store.sync.append('c4', turn(k * 100 + i, conversation_id='c4')[:2], scope='s')
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        messages = store.sync.load('c4', scope='s').messages
        assert len(messages) == 40
        for first, second in zip(messages[::2], messages[1::2], strict=True):
            assert first.run_id == second.run_id  # each batch stayed together

    def test_scope_is_enforced(self, store: AsyncStore[SyncStore]) -> None:
        store.sync.append('c5', turn(0, conversation_id='c5'), scope='tenant-a')
        calls: list[Callable[[], object]] = [
            lambda: store.sync.load('c5', scope='tenant-b'),
            lambda: store.sync.append('c5', turn(1), scope='tenant-b'),
            lambda: store.sync.fork('c5', scope='tenant-b'),
            lambda: store.sync.delete('c5', scope='tenant-b'),
        ]
        for call in calls:
            with pytest.raises(ConversationNotFound):
                call()
        assert store.sync.search('zebra0', scope='tenant-b') == []
        assert store.sync.list('tenant-b') == []
        with pytest.raises(UserError):
            store.sync.append('c6', turn(0), scope='')

    def test_replace_makes_a_branch_and_keeps_the_old_tip(self, store: AsyncStore[SyncStore]) -> None:
        revision = store.sync.append('c7', turn(0, conversation_id='c7') + turn(1, conversation_id='c7'), scope='s')
        before = store.sync.load('c7', scope='s')
        compacted = [
            ModelRequest(parts=[UserPromptPart('summary of earlier turns', timestamp=T0)]),
            *turn(1, conversation_id='c7')[1:],
        ]
        with pytest.raises(ConflictError):
            store.sync.replace('c7', compacted, scope='s', expected_revision=revision - 1)
        new_revision = store.sync.replace('c7', compacted, scope='s', expected_revision=revision)
        after = store.sync.load('c7', scope='s')
        assert after.messages == compacted and after.revision == new_revision
        old = store.sync.branches('c7', scope='s')
        assert any(length == 8 for _, length in old)
        old_branch = next(branch for branch, length in old if length == 8)
        assert store.sync.load_at('c7', scope='s', branch_id=old_branch, position=8) == before.messages

    def test_save_branch_at_answers_an_earlier_turn_again(self, store: AsyncStore[SyncStore]) -> None:
        revision = store.sync.append('c8', turn(0, conversation_id='c8') + turn(1, conversation_id='c8'), scope='s')
        before = store.sync.load('c8', scope='s').messages
        again = SampleResult(turn(2, conversation_id='c8', run_id='r2'), 'r2', 'c8')
        with pytest.raises(UserError, match='expected_revision'):
            store.sync.save(again, scope='s', branch_at=4)
        with pytest.raises(UserError, match='past the 8 messages'):
            store.sync.save(again, scope='s', branch_at=9, expected_revision=revision)
        with pytest.raises(ConflictError):
            store.sync.save(again, scope='s', branch_at=4, expected_revision=revision - 1)
        assert store.sync.load('c8', scope='s').revision == revision  # each refusal wrote nothing
        assert 'r2' not in {r.run_id for r in store.sync.list_runs('c8', scope='s')}
        branched = store.sync.save(again, scope='s', branch_at=4, expected_revision=revision)
        after = store.sync.load('c8', scope='s')
        assert after.messages == before[:4] + turn(2, conversation_id='c8', run_id='r2')
        assert after.revision == branched and after.usage.requests == 2
        assert [r.status for r in store.sync.list_runs('c8', scope='s') if r.run_id == 'r2'] == ['completed']
        [(old_branch, old_length), (_, new_length)] = store.sync.branches('c8', scope='s')
        assert (old_length, new_length) == (8, 8)
        assert store.sync.load_at('c8', scope='s', branch_id=old_branch, position=8) == before
        assert store.sync.verify('c8', scope='s').ok
        with pytest.raises(UserError, match='already stored'):
            store.sync.save(again, scope='s', branch_at=2, expected_revision=branched)
        at_tip = SampleResult(turn(3, conversation_id='c8', run_id='r3'), 'r3', 'c8')
        tip = store.sync.save(at_tip, scope='s', branch_at=8, expected_revision=branched)  # the tip: an append
        assert store.sync.load('c8', scope='s').length == 12 and tip == branched + 1
        with pytest.raises(ConversationNotFound):
            store.sync.save(at_tip, scope='other', conversation_id='c8', branch_at=0, expected_revision=tip)

    def test_fork_shares_the_prefix_and_survives_the_parent(self, store: AsyncStore[SyncStore]) -> None:
        store.sync.append('c8', turn(0, conversation_id='c8') + turn(1, conversation_id='c8'), scope='s')
        fork_id = store.sync.fork('c8', scope='s', at=4)
        fork = store.sync.load(fork_id, scope='s')
        assert fork.messages == turn(0, conversation_id='c8') and fork.forked_from == 'c8' and fork.shared_prefix == 4
        store.sync.append(fork_id, turn(5, conversation_id=fork_id), scope='s')
        assert store.sync.load('c8', scope='s').length == 8  # the parent is untouched
        store.sync.delete('c8', scope='s')
        kept = store.sync.load(fork_id, scope='s')
        assert kept.messages == turn(0, conversation_id='c8') + turn(5, conversation_id=fork_id)
        assert store.sync.verify(fork_id, scope='s').ok

    def test_delete_erases_everything(self, store: AsyncStore[SyncStore]) -> None:
        store.sync.save(SampleResult(turn(0, conversation_id='c9', run_id='r9'), 'r9', 'c9'), scope='s')
        assert store.sync.search('zebra0', scope='s', conversation_id='c9')
        store.sync.delete('c9', scope='s')
        with pytest.raises(ConversationNotFound):
            store.sync.load('c9', scope='s')
        assert store.sync.search('zebra0', scope='s') == []
        assert store.sync.get_run('r9', scope='s') is None  # the run record went with it

    def test_prune_by_age_and_count(self, store: AsyncStore[SyncStore]) -> None:
        for k in range(4):
            store.sync.append(f'p{k}', turn(k, conversation_id=f'p{k}'), scope='s')
        store.sync.append('other', turn(0), scope='t')
        assert sorted(store.sync.prune(keep_last=2, scope='s')) == ['p0', 'p1']
        assert [c.conversation_id for c in store.sync.list('s')] == ['p3', 'p2']
        assert sorted(store.sync.prune(older_than=datetime.now(tz=UTC) + timedelta(seconds=1), scope=EVERY_SCOPE)) == [
            'other',
            'p2',
            'p3',
        ]
        with pytest.raises(UserError):
            store.sync.prune(scope='s')

    def test_last_n_cuts_where_calls_keep_their_results(self, store: AsyncStore[SyncStore]) -> None:
        store.sync.append('c10', turn(0, conversation_id='c10') + turn(1, conversation_id='c10'), scope='s')
        window = store.sync.load('c10', scope='s', last=3)
        assert window.offset == 4 + 2 or window.offset <= 4
        first = window.messages[0]
        assert isinstance(first, ModelRequest)
        calls = {p.tool_call_id for m in window.messages for p in m.parts if isinstance(p, ToolCallPart)}
        results = {p.tool_call_id for m in window.messages for p in m.parts if isinstance(p, ToolReturnPart)}
        assert results <= calls
        assert store.sync.load('c10', scope='s', last=100).offset == 0

    def test_last_n_reports_the_batches_of_its_window(self, store: AsyncStore[SyncStore]) -> None:
        for k in range(3):
            store.sync.append('w', turn(k, conversation_id='w'), scope='s')
        assert [(b.start, b.end) for b in store.sync.load('w', scope='s').batches] == [(0, 4), (4, 8), (8, 12)]
        window = store.sync.load('w', scope='s', last=2)
        assert window.offset >= 8
        assert [(b.start, b.end) for b in window.batches] == [(8, 12)]

    def test_search_ranks_and_scopes(self, store: AsyncStore[SyncStore]) -> None:
        for k in range(3):
            store.sync.append(f's{k}', turn(k, conversation_id=f's{k}', text=f'topic{k}'), scope='s')
        hits = store.sync.search('zebra1', scope='s')
        assert [(h.conversation_id, h.position) for h in hits] == [('s1', 3)]
        assert 'zebra1' in hits[0].snippet
        assert store.sync.search('question', scope='s', conversation_id='s2')[0].conversation_id == 's2'
        assert {h.conversation_id for h in store.sync.search('question', scope='s', limit=10)} == {'s0', 's1', 's2'}
        assert store.sync.search('"; DROP TABLE messages; --', scope='s') == []

    def test_search_syntax_roles_and_dropped_turns(self, store: AsyncStore[SyncStore]) -> None:
        first = [
            ModelRequest(parts=[UserPromptPart('the parcel went to North Lisbon', timestamp=T0)], timestamp=T0),
            *turn(1, conversation_id='q1')[1:],
        ]
        revision = store.sync.append('q1', first, scope='s')
        later = [ModelRequest(parts=[UserPromptPart('refunds are processed weekly', timestamp=T0)], timestamp=T0)]
        store.sync.replace('q1', later, scope='s', expected_revision=revision)

        def positions(query: str, **options: bool) -> list[int]:
            return sorted(h.position for h in store.sync.search(query, scope='s', conversation_id='q1', **options))

        assert positions('"north lisbon"') == [] and positions('"north lisbon"', include_dropped=True) == [0]
        assert positions('"lisbon north"', include_dropped=True) == []  # a phrase keeps its order
        assert positions('refund*') == [0] and positions('refund') == []  # a prefix, then a whole word
        assert positions('parcel OR refunds', include_dropped=True) == []  # OR is a word, never syntax
        [hit] = store.sync.search('weekly', scope='s', conversation_id='q1')
        assert (hit.role, hit.timestamp) == ('user', T0)
        for hostile in ('body:x', 'NEAR(a b)', '"unclosed', '^start', 'a -b', '*'):
            store.sync.search(hostile, scope='s', conversation_id='q1', include_dropped=True)  # never an error

    def test_chain_verifies(self, store: AsyncStore[SyncStore]) -> None:
        store.sync.append('c11', turn(0, conversation_id='c11'), scope='s')
        store.sync.append('c11', turn(1, conversation_id='c11'), scope='s')
        check = store.sync.verify('c11', scope='s')
        assert check.ok and check.checked == 8 and check.chain_head == store.sync.load('c11', scope='s').chain_head

    def test_async_face(self, store: AsyncStore[SyncStore]) -> None:
        async def main() -> None:
            revision = await store.append('c12', turn(0, conversation_id='c12'), scope='s')
            loaded = await store.load('c12', scope='s')
            assert loaded.revision == revision and len(loaded.messages) == 4
            assert [c.conversation_id for c in await store.list('s')] == ['c12']
            assert (await store.search('zebra0', scope='s'))[0].conversation_id == 'c12'

        asyncio.run(main())
