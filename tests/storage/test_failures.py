"""Bad data and failing backends surface as named StoreErrors and leave stored data as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.storage.conftest import fresh_postgres_url, needs_postgres
from threadline.exceptions import BackendError, ConversationNotFound, CorruptRecordError, StoreError, UserError
from threadline.messages import ModelRequest, UserPromptPart
from threadline.storage import SQLiteStore
from threadline.storage.migrations import MIGRATIONS
from threadline.storage.testing import turn


def test_migrations_are_named_and_recorded(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'a.db')
    assert store.migrations() == [m.name for m in MIGRATIONS]
    store.close()
    assert SQLiteStore(tmp_path / 'a.db').migrations() == [m.name for m in MIGRATIONS]  # reopening runs nothing twice


def test_a_corrupt_row_names_conversation_and_position(tmp_path: Path) -> None:
    path = tmp_path / 'c.db'
    store = SQLiteStore(path)
    store.sync.append('c1', turn(0, conversation_id='c1'), scope='s')
    with sqlite3.connect(path) as raw:
        raw.execute('UPDATE messages SET body = \'{"kind": "request", "parts": 7}\' WHERE position = 2')
    with pytest.raises(CorruptRecordError) as info:
        store.sync.load('c1', scope='s')
    assert info.value.conversation_id == 'c1' and info.value.position == 2
    assert "conversation 'c1', message 2" in str(info.value)
    assert not store.sync.verify('c1', scope='s').ok  # and the chain notices the change


@pytest.mark.parametrize('position', [0, 249, 250, 599])
def test_a_long_history_loads_whole_and_a_corrupt_row_is_named_in_any_chunk(tmp_path: Path, position: int) -> None:
    """A load decodes a long history a chunk at a time (to bound its peak memory): the messages
    come back exactly as stored, and a damaged row is named by its own position whichever chunk
    it falls in, including either side of a chunk boundary."""
    path = tmp_path / 'long.db'
    store = SQLiteStore(path)
    history = [m for k in range(150) for m in turn(k, conversation_id='c1')]
    store.sync.append('c1', history, scope='s')
    assert store.sync.load('c1', scope='s').messages == history
    with sqlite3.connect(path) as raw:
        raw.execute('UPDATE messages SET body = \'{"kind": "request", "parts": 7}\' WHERE position = ?', (position,))
    with pytest.raises(CorruptRecordError) as info:
        store.sync.load('c1', scope='s')
    assert info.value.position == position
    store.close()


def test_a_changed_message_fails_the_chain(tmp_path: Path) -> None:
    path = tmp_path / 'h.db'
    store = SQLiteStore(path)
    store.sync.append('c1', turn(0, conversation_id='c1'), scope='s')
    store.sync.append('c1', turn(1, conversation_id='c1'), scope='s')
    with sqlite3.connect(path) as raw:
        body = raw.execute('SELECT body FROM messages WHERE position = 5').fetchone()[0]
        raw.execute('UPDATE messages SET body = ? WHERE position = 5', (body.replace('call-1', 'call-X'),))
    check = store.sync.verify('c1', scope='s')
    assert not check.ok and check.first_bad_position == 4 and check.reason == 'a stored message changed'


def test_disk_full_rolls_back_and_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / 'full.db'
    store = SQLiteStore(path)
    store.sync.append('c1', turn(0, conversation_id='c1'), scope='s')
    before = store.sync.load('c1', scope='s')
    conn = store.dialect.connection
    conn.execute('PRAGMA max_page_count = ' + str(conn.execute('PRAGMA page_count').fetchone()[0]))
    big = [ModelRequest(parts=[UserPromptPart('x' * 200_000)])]
    with pytest.raises(BackendError, match='disk is full'):
        store.sync.append('c1', big, scope='s')
    after = store.sync.load('c1', scope='s')
    assert after.messages == before.messages and after.revision == before.revision


def test_locked_database_is_reported(tmp_path: Path) -> None:
    path = tmp_path / 'locked.db'
    store = SQLiteStore(path, busy_timeout=0.1)
    store.sync.append('c1', turn(0, conversation_id='c1'), scope='s')
    other = sqlite3.connect(path, isolation_level=None)
    other.execute('BEGIN IMMEDIATE')
    try:
        with pytest.raises(BackendError, match='locked'):
            store.sync.append('c1', turn(1, conversation_id='c1'), scope='s')
    finally:
        other.execute('ROLLBACK')
    assert store.sync.load('c1', scope='s').length == 4


def test_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / 'junk.db'
    path.write_bytes(b'this is not sqlite' * 100)
    with pytest.raises(CorruptRecordError, match='damaged'):
        SQLiteStore(path)


def test_bad_arguments_are_user_errors() -> None:
    from threadline.storage import MemoryStore

    store = MemoryStore()
    with pytest.raises(UserError, match=r'messages\[1\] is a dict'):
        store.sync.append('c1', [turn(0)[0], {'kind': 'request'}], scope='s')
    with pytest.raises(UserError, match='provenance'):
        store.sync.append('c1', turn(0), scope='s', provenance='browser')
    with pytest.raises(ConversationNotFound):
        store.sync.load('missing', scope='s')
    with pytest.raises(UserError, match='expected_revision'):
        store.sync.replace('c1', turn(0), scope='s', expected_revision=None)
    assert issubclass(ConversationNotFound, StoreError)


def test_postgres_down_is_a_backend_error() -> None:
    pytest.importorskip('psycopg')
    from threadline.storage import PostgresStore

    with pytest.raises(BackendError, match='cannot reach PostgreSQL'):
        PostgresStore('postgresql://postgres@127.0.0.1:1/test?connect_timeout=1', max_size=1, connect_timeout=1)


@needs_postgres
def test_postgres_schema_is_idempotent_and_migrations_recorded() -> None:
    from threadline.storage import PostgresStore

    url = fresh_postgres_url()
    first, second = PostgresStore(url), PostgresStore(url)
    try:
        assert first.migrations() == second.migrations() == [m.name for m in MIGRATIONS]
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize('target', ['mongodb://db/x', 'mysql://root@localhost/test', 'postgresq://typo/db'])
def test_an_unknown_store_url_is_refused_naming_the_schemes(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from threadline.exceptions import UserError
    from threadline.storage import open_store

    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match=r'postgresql://.*sqlite:///path.*file:<directory>'):
        open_store(target)
    assert list(tmp_path.iterdir()) == []  # no stray SQLite file named after the URL
