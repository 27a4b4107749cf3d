"""Store fixtures: PostgreSQL tests read THREADLINE_TEST_POSTGRES_URL and skip, saying so, without it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from threadline.storage import AsyncStore, SyncStore

POSTGRES_URL = os.environ.get('THREADLINE_TEST_POSTGRES_URL')
needs_postgres = pytest.mark.skipif(
    not POSTGRES_URL, reason='THREADLINE_TEST_POSTGRES_URL is not set (CI sets it; export it to run PostgreSQL tests)'
)


def fresh_postgres_url() -> str:
    """A clean schema for one test: the tables of earlier tests are dropped first."""
    import psycopg

    assert POSTGRES_URL
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute('DROP SCHEMA IF EXISTS public CASCADE')
        conn.execute('CREATE SCHEMA public')
    return POSTGRES_URL


BACKENDS = ['memory', 'sqlite', 'file', pytest.param('postgres', marks=needs_postgres)]


@pytest.fixture(params=BACKENDS)
def any_store(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[AsyncStore[SyncStore]]:
    """Each backend in turn, fresh."""
    from pathlib import Path

    from threadline.storage import FileStore, MemoryStore, SQLiteStore

    assert isinstance(tmp_path, Path)
    store: AsyncStore[SyncStore]
    if request.param == 'memory':
        store = MemoryStore()
    elif request.param == 'sqlite':
        store = SQLiteStore(tmp_path / 'any.db')
    elif request.param == 'file':
        store = FileStore(tmp_path / 'files')
    else:
        from threadline.storage import PostgresStore

        store = PostgresStore(fresh_postgres_url())
    yield store
    store.close()
