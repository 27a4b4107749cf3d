"""An attacker with the data but not the key removes a conversation's seals and the store's
record of them, hoping that the next process to open the store seals the forged content as if it
were a store written before seals. No process does: not a second server sharing the key with its
own tip book, not a fresh container, not the same data after a move. And the tip book, keyed by
the store's id, catches a truncation whatever the path or host spelling it is reached through."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.storage.conftest import fresh_postgres_url, needs_postgres
from tests.storage.test_seal_attacks import CID, SCOPE, SQL, Lines, _edit_body, _file_edit_body, populate
from threadline.storage import FileStore, SQLiteStore, StoreSeal, SyncStore
from threadline.storage.testing import turn
from threadline.trust.sealing import Tip


def _second_machine(keys: Path, where: Path) -> StoreSeal:
    """The same store key, a tip book that never saw the store (another server, a new container)."""
    where.mkdir()
    shutil.copy(keys / 'store-keys.json', where / 'store-keys.json')
    return StoreSeal.in_directory(where)


def _sql(backend: str, tmp_path: Path) -> tuple[Callable[[StoreSeal], SyncStore], SQL]:
    if backend == 'sqlite':
        path = tmp_path / 'store.db'

        def open_sqlite(seal: StoreSeal) -> SyncStore:
            return SQLiteStore(path, seal=seal).sync

        open_sqlite(StoreSeal.ephemeral()).close()
        return open_sqlite, SQL(sqlite3.connect(path), '?')
    import psycopg

    from threadline.storage import PostgresStore

    url = fresh_postgres_url()

    def open_postgres(seal: StoreSeal) -> SyncStore:
        return PostgresStore(url, seal=seal).sync

    return open_postgres, SQL(psycopg.connect(url), '%s')


@pytest.mark.parametrize('backend', ['sqlite', pytest.param('postgres', marks=needs_postgres)])
def test_a_sql_store_whose_seals_were_removed_is_never_sealed_again(tmp_path: Path, backend: str) -> None:
    open_store, db = _sql(backend, tmp_path)
    first_seal = StoreSeal.in_directory(tmp_path / 'first')
    first = open_store(first_seal)
    populate(first)
    first.close()

    _edit_body(db)  # the forged content, with the unkeyed chain recomputed
    db('DELETE FROM seals')
    db("DELETE FROM threadline_meta WHERE key = 'seals'")

    second = open_store(_second_machine(tmp_path / 'first', tmp_path / 'second'))
    check = second.verify(CID, scope=SCOPE)
    assert not check.ok and check.code == 'no_seals', check
    [(record,)] = db("SELECT value FROM threadline_meta WHERE key = 'seals'")
    assert json.loads(record)['adopted'] == 0 and 'removed' in json.loads(record)['refused']
    second.close()

    again = open_store(first_seal)  # the machine that wrote it says so too
    assert not again.verify(CID, scope=SCOPE).ok
    again.close()
    db.conn.close()


def test_a_file_store_whose_seals_were_removed_is_never_sealed_again(tmp_path: Path) -> None:
    first_seal = StoreSeal.in_directory(tmp_path / 'first')
    store = FileStore(tmp_path / 'files', seal=first_seal).sync
    populate(store)
    lines = Lines(tmp_path / 'files')
    _file_edit_body(lines)
    lines.lines = [x for x in lines.lines if x['t'] != 'seal']
    lines.save()
    (tmp_path / 'files' / 'seals.json').unlink()

    second = FileStore(tmp_path / 'files', seal=_second_machine(tmp_path / 'first', tmp_path / 'second')).sync
    check = second.verify(CID, scope=SCOPE)
    assert not check.ok and check.code == 'no_seals', check
    record = json.loads((tmp_path / 'files' / 'seals.json').read_text())
    assert record['adopted'] == 0 and 'removed' in record['refused']
    assert not FileStore(tmp_path / 'files', seal=first_seal).sync.verify(CID, scope=SCOPE).ok


def test_a_conversation_whose_first_seal_the_book_does_not_know_fails() -> None:
    seal = StoreSeal.ephemeral()
    assert seal.tips is not None
    store = SQLiteStore(':memory:', seal=seal).sync
    store.append(CID, turn(0, conversation_id=CID), scope=SCOPE)
    walk = seal.walk(CID, SCOPE, [])
    seal.tips.advance('somewhere', CID, Tip(genesis='f' * 64, seq=0, tag='f' * 64))
    replaced = seal.tip_status('somewhere', CID, walk.__class__(None, ('e' * 64,), ('k',)))
    assert replaced.tip == 'replaced' and replaced.problem is not None and replaced.problem.code == 'replaced'
    assert walk.problem is None


@needs_postgres
def test_a_postgres_truncation_is_caught_through_any_spelling_of_the_host(tmp_path: Path) -> None:
    from threadline.storage import PostgresStore

    url = fresh_postgres_url()
    other = url.replace('127.0.0.1', 'localhost') if '127.0.0.1' in url else url.replace('localhost', '127.0.0.1')
    assert other != url
    seal = StoreSeal.in_directory(tmp_path / 'keys')
    store = PostgresStore(url, seal=seal).sync
    populate(store)
    store.close()
    import psycopg

    db = SQL(psycopg.connect(url), '%s')
    db.drop_last_batch()
    [(last,)] = db('SELECT max(seq) FROM seals WHERE conversation_id = ?', CID)
    db('DELETE FROM seals WHERE conversation_id = ? AND seq >= ?', CID, last - 1)
    db('UPDATE conversations SET quarantine = NULL WHERE id = ?', CID)
    db.conn.close()
    check = PostgresStore(other, seal=seal).sync.verify(CID, scope=SCOPE)
    assert not check.ok and check.code == 'truncated' and check.tip == 'truncated', check


@pytest.mark.parametrize('backend', ['sqlite', 'file'])
def test_a_truncation_is_caught_after_the_store_is_moved(tmp_path: Path, backend: str) -> None:
    seal = StoreSeal.in_directory(tmp_path / 'keys')
    name = 'store.db' if backend == 'sqlite' else 'files'

    def open_at(where: Path) -> SyncStore:
        return (
            SQLiteStore(where / name, seal=seal).sync
            if backend == 'sqlite'
            else FileStore(where / name, seal=seal).sync
        )

    (tmp_path / 'a').mkdir()
    store = open_at(tmp_path / 'a')
    store.append(CID, turn(0, conversation_id=CID), scope=SCOPE)
    store.close()
    before = tmp_path / 'before'
    shutil.copytree(tmp_path / 'a', before)  # a copy of the store as it was: the rollback to come
    store = open_at(tmp_path / 'a')
    store.append(CID, turn(1, conversation_id=CID), scope=SCOPE)
    store.close()
    shutil.rmtree(tmp_path / 'a')
    before.rename(tmp_path / 'b')  # the older copy, at another path
    check = open_at(tmp_path / 'b').verify(CID, scope=SCOPE)
    assert not check.ok and check.tip == 'truncated', check
