"""Conformance for turn leases (`TurnLeases`): one holder at a time, renewal, expiry, the line
in arrival order, scopes."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from threadline.exceptions import UserError
from threadline.storage._contract import SyncStore
from threadline.storage._face import AsyncStore
from threadline.storage._records import EVERY_SCOPE
from threadline.storage.testing._samples import turn

__all__ = ['LeaseConformance', 'ScopeCountConformance']


class LeaseConformance:
    """Behaviours of `claim_turn` and `release_turn`."""

    def test_one_holder_at_a_time_until_released(self, store: AsyncStore[SyncStore]) -> None:
        sync = store.sync
        assert sync.claim_turn('c1', scope='s', holder='server-a', ttl=60)
        assert not sync.claim_turn('c1', scope='s', holder='server-b', ttl=60)
        assert sync.claim_turn('c1', scope='s', holder='server-a', ttl=60)  # its own: a renewal
        sync.release_turn('c1', scope='s', holder='server-b')  # not its lease: nothing happens
        assert not sync.claim_turn('c1', scope='s', holder='server-b', ttl=60)
        sync.release_turn('c1', scope='s', holder='server-a')
        assert sync.claim_turn('c1', scope='s', holder='server-b', ttl=60)

    def test_a_crashed_holder_is_outwaited(self, store: AsyncStore[SyncStore]) -> None:
        sync = store.sync
        assert sync.claim_turn('c1', scope='s', holder='crashed', ttl=0.05)
        time.sleep(0.1)
        assert sync.claim_turn('c1', scope='s', holder='next', ttl=60)
        assert not sync.claim_turn('c1', scope='s', holder='crashed', ttl=60)

    def test_leases_of_other_scopes_and_conversations_never_block(self, store: AsyncStore[SyncStore]) -> None:
        sync = store.sync
        assert sync.claim_turn('c1', scope='s', holder='a', ttl=60)
        assert sync.claim_turn('c1', scope='other', holder='b', ttl=60)
        assert sync.claim_turn('c2', scope='s', holder='b', ttl=60)
        sync.release_turn('c1', scope='other', holder='a')  # a's lease in scope s is untouched
        assert not sync.claim_turn('c1', scope='s', holder='b', ttl=60)

    def test_a_freed_lease_goes_to_the_first_in_line(self, store: AsyncStore[SyncStore]) -> None:
        def claim(holder: str) -> bool:
            return store.sync.claim_turn('c1', scope='s', holder=holder, ttl=60)

        assert claim('a')
        assert not claim('b') and not claim('c')  # b waits first, c behind it
        assert not claim('b')  # asking again keeps b's place
        store.sync.release_turn('c1', scope='s', holder='a')
        assert not claim('c') and not claim('newcomer')  # b is ahead of both
        assert claim('b')
        store.sync.release_turn('c1', scope='s', holder='b')
        assert not claim('newcomer')  # c came before it
        assert claim('c')
        store.sync.release_turn('c1', scope='s', holder='c')
        assert claim('newcomer')

    def test_a_claimant_that_stops_asking_loses_its_place(self, store: AsyncStore[SyncStore]) -> None:
        sync = store.sync
        assert sync.claim_turn('c1', scope='s', holder='a', ttl=60)
        assert not sync.claim_turn('c1', scope='s', holder='crashed', ttl=60, patience=0.05)
        assert not sync.claim_turn('c1', scope='s', holder='next', ttl=60)
        sync.release_turn('c1', scope='s', holder='a')
        time.sleep(0.1)
        assert sync.claim_turn('c1', scope='s', holder='next', ttl=60)

    def test_a_claimant_that_gives_up_leaves_the_line(self, store: AsyncStore[SyncStore]) -> None:
        sync = store.sync
        assert sync.claim_turn('c1', scope='s', holder='a', ttl=60)
        assert not sync.claim_turn('c1', scope='s', holder='impatient', ttl=60)
        sync.release_turn('c1', scope='s', holder='impatient')  # stopped waiting
        sync.release_turn('c1', scope='s', holder='a')
        assert sync.claim_turn('c1', scope='s', holder='later', ttl=60)

    def test_another_scopes_line_never_blocks(self, store: AsyncStore[SyncStore]) -> None:
        sync = store.sync
        assert sync.claim_turn('c1', scope='s', holder='a', ttl=60)
        assert not sync.claim_turn('c1', scope='s', holder='waiting', ttl=60)
        assert sync.claim_turn('c1', scope='other', holder='b', ttl=60)
        sync.release_turn('c1', scope='s', holder='a')
        sync.release_turn('c1', scope='other', holder='waiting')  # not its line: its place is kept
        assert not sync.claim_turn('c1', scope='s', holder='b', ttl=60)
        assert sync.claim_turn('c1', scope='s', holder='waiting', ttl=60)

    def test_racing_claimants_get_one_lease(self, store: AsyncStore[SyncStore]) -> None:
        sync = store.sync
        with ThreadPoolExecutor(8) as pool:
            won = list(pool.map(lambda k: sync.claim_turn('race', scope='s', holder=f'h{k}', ttl=60), range(16)))
        assert won.count(True) == 1

    @pytest.mark.parametrize(
        ('holder', 'ttl', 'named'), [('', 60, 'holder'), ('a', 0, 'ttl'), ('a', -1, 'ttl'), ('a', 'x', 'ttl')]
    )
    def test_bad_arguments_are_named(self, store: AsyncStore[SyncStore], holder: str, ttl: object, named: str) -> None:
        with pytest.raises(UserError, match=named):
            store.sync.claim_turn('c1', scope='s', holder=holder, ttl=ttl)  # type: ignore[arg-type]
        with pytest.raises(UserError, match='scope'):
            store.sync.claim_turn('c1', scope='', holder='a', ttl=60)
        with pytest.raises(UserError, match='patience'):
            store.sync.claim_turn('c1', scope='s', holder='a', ttl=60, patience=0)


class ScopeCountConformance:
    """Behaviour of `scope_counts`, the operator's view across tenants."""

    def test_scope_counts_needs_every_scope(self, store: AsyncStore[SyncStore]) -> None:

        sync = store.sync
        assert sync.scope_counts(EVERY_SCOPE) == {}
        for cid, scope in (('a1', 'acme'), ('a2', 'acme'), ('b1', 'beta')):
            sync.append(cid, turn(0, conversation_id=cid), scope=scope)
        assert sync.scope_counts(EVERY_SCOPE) == {'acme': 2, 'beta': 1}
        with pytest.raises(UserError, match='EVERY_SCOPE'):
            sync.scope_counts('acme')  # type: ignore[arg-type]
