"""`unknown_seal_keys()`: the key ids of stored seals a store holds no key for, on SQLite and PostgreSQL,
found with one index seek per distinct id (a store sealed over years by rotating keys)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.storage.conftest import fresh_postgres_url, needs_postgres
from threadline.storage import PostgresStore, SQLiteStore
from threadline.storage.testing import turn
from threadline.trust.sealing import StoreSeal

Opener = Callable[[StoreSeal], object]


def keys(tmp_path: Path, spec: str) -> StoreSeal:
    return StoreSeal.from_environment({'THREADLINE_STORE_KEYS': spec, 'THREADLINE_HOME': str(tmp_path)})


@pytest.fixture(params=['sqlite', pytest.param('postgres', marks=needs_postgres)])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return str(tmp_path / 'seals.db') if request.param == 'sqlite' else fresh_postgres_url()


def opened(where: str, seal: StoreSeal) -> SQLiteStore | PostgresStore:
    return PostgresStore(where, seal=seal) if '://' in where else SQLiteStore(where, seal=seal)


def test_seals_by_keys_it_does_not_hold_are_named(where: str, tmp_path: Path) -> None:
    for n, key in enumerate(('k1', 'k2', 'k3')):  # three rotations, each sealing a conversation
        store = opened(where, keys(tmp_path, f'{key}={n + 1:02x}' * 1 + '0' * 62))
        store.sync.append(f'c{n}', turn(n, conversation_id=f'c{n}'), scope='s')
        assert store.sync.unknown_seal_keys() == [k for k in ('k1', 'k2') if k < key]
        store.close()
    everything = opened(where, keys(tmp_path, 'k3=' + '03' + '0' * 62 + ',k1=' + '01' + '0' * 62))
    assert everything.sync.unknown_seal_keys() == ['k2']
    everything.close()
    empty = opened(
        str(tmp_path / 'empty.db') if '://' not in where else fresh_postgres_url(), keys(tmp_path, 'k9=' + '0' * 64)
    )
    assert empty.sync.unknown_seal_keys() == []
    empty.close()
