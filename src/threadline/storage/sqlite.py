"""`SQLiteStore`: the embedded default. One file, WAL journal, numbered migrations run on open.

Writes take the database's write lock up front (`BEGIN IMMEDIATE`), so two processes appending to
one conversation serialize instead of interleaving, and a killed process leaves either the whole
transaction or none of it. Full-text search uses FTS5 with bm25 ranking.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from threadline.exceptions import BackendError, CorruptRecordError, SearchQueryTooLarge, StoreError
from threadline.storage._face import AsyncStore, WouldWait
from threadline.storage.index._grams import grams_of, has_grams
from threadline.storage.index._query import SEARCH_BUDGET, Term
from threadline.storage.index._sqlite import search_fts
from threadline.storage.migrations import applied, migrate
from threadline.storage.sql._base import token
from threadline.storage.sql._dialect import Connection, MessageRow, SearchRow, scalar
from threadline.storage.sql._store import SQLStore
from threadline.trust.sealing import StoreSeal

__all__ = ['SQLiteDialect', 'SQLiteStore']

_AUTOCHECKPOINT = 1000
"""WAL pages after which a commit made in a thread checkpoints (SQLite's default)."""
_LOOP_WRITES = 24
"""Writes committed in the event loop (where no checkpoint runs) after which a checkpoint is made
in a thread of its own: a step write adds a few dozen WAL pages, so the WAL stays near
`_AUTOCHECKPOINT` pages however long every write fits in the loop."""


class SQLiteStore(AsyncStore[SQLStore]):
    """A conversation and step store in one SQLite file (`':memory:'` for a throwaway one).

    `synchronous='FULL'` (the default) makes each committed write survive power loss, not only a
    crash of the process; `'NORMAL'` trades that for speed. `store.sync` is the same store,
    synchronous. `read_only=True` opens an existing database for reading only (it is never created
    or migrated, and a database in a read-only directory can still be read). `seal` is the key and
    tip book that seal its writes (default: `StoreSeal.from_environment()`; see `StoreSeal`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ':memory:',
        *,
        synchronous: str = 'FULL',
        busy_timeout: float = 30.0,
        read_only: bool = False,
        seal: StoreSeal | None = None,
    ) -> None:
        self.dialect = SQLiteDialect(path, synchronous=synchronous, busy_timeout=busy_timeout, read_only=read_only)
        self.path = self.dialect.path
        self.synchronous = synchronous.upper()
        """How a commit reaches the disk (`FULL` or `NORMAL`); `dbos_config` gives DBOS's file the same."""
        super().__init__(SQLStore(self.dialect, seal))

    def __repr__(self) -> str:
        return f'SQLiteStore({self.path!r})'

    def migrations(self) -> list[str]:
        """The names of the migrations applied to this database, in order."""
        return self.dialect.migrations()

    def _uncontended(self) -> AbstractContextManager[bool]:
        return self.dialect.uncontended()


class SQLiteDialect:
    """One SQLite file: WAL, `BEGIN IMMEDIATE` writes, FTS5 search."""

    name = 'sqlite'

    def __init__(
        self,
        path: str | os.PathLike[str] = ':memory:',
        *,
        synchronous: str = 'FULL',
        busy_timeout: float = 30.0,
        read_only: bool = False,
    ) -> None:
        self.path = str(path)
        self._synchronous = synchronous.upper()
        self._busy_ms = int(busy_timeout * 1000)
        self._at_once = False
        """Inside `uncontended`: a lock held by another process fails at once (`WouldWait`)."""
        self._loop_pragmas = False
        """The connection is set for `uncontended` (no busy wait, no autocheckpoint). It stays so
        between such operations, which is most of them, and is set back before one in a thread."""
        self._loop_writes = 0
        """Writes committed inside `uncontended` since the last checkpoint made for them."""
        self._checkpointer: threading.Thread | None = None
        self.location = None if self.path == ':memory:' else 'sqlite:' + str(Path(self.path).resolve())
        self.writable = not read_only
        self._lock = threading.RLock()
        self._search_lock = threading.Lock()
        self._searcher: sqlite3.Connection | None = None
        try:
            if read_only:
                self.connection = _open_read_only(self.path, busy_timeout)
                return
            if self.path != ':memory:':
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self.connection = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=busy_timeout
            )
            self.connection.execute('PRAGMA journal_mode=WAL')
            self.connection.execute(f'PRAGMA synchronous={synchronous}')
            self.connection.execute(f'PRAGMA busy_timeout={self._busy_ms}')
        except sqlite3.DatabaseError as exc:
            raise _backend_error(exc, f'cannot open the SQLite database at {self.path}') from None

    def describe(self) -> str:
        return self.path

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.join()
        with self._lock:
            self.connection.close()
        with self._search_lock:
            if self._searcher is not None:
                self._searcher.close()

    def migrate(self, conn: Connection) -> list[str]:
        """`BEGIN IMMEDIATE` (the write `conn` is in) already keeps a second opener waiting."""
        return migrate(
            conn,
            'sqlite',
            has_table=_has_table,
            run_script=_run_script,
            steps={'index_grams_of_older_messages': self._index_grams_of_older_messages},
            placeholder='?',
        )

    def q(self, sql: str) -> str:
        return sql

    def lock_conversation(self, conn: Connection, conversation_id: str) -> None:
        """`BEGIN IMMEDIATE` already holds the database's write lock."""

    def migrations(self) -> list[str]:
        """The names of the migrations applied to this database, in order."""
        with self.read() as conn:
            return applied(conn, 'sqlite', has_table=_has_table)

    @contextmanager
    def write(self, *, durable: bool = True) -> Iterator[Any]:
        with self._lock:
            if durable or self._synchronous in ('OFF', 'NORMAL', '0', '1'):
                yield from self._transaction()
                return
            # In WAL mode a commit under synchronous=NORMAL appends to the WAL without fsync; the
            # next FULL commit syncs the WAL, and with it this one. Killing the process loses
            # nothing either way; only a power loss before that sync can.
            self.connection.execute('PRAGMA synchronous=NORMAL')
            try:
                yield from self._transaction()
            finally:
                self.connection.execute(f'PRAGMA synchronous={self._synchronous}')

    @contextmanager
    def uncontended(self) -> Iterator[bool]:
        """Hold the connection for operations on the calling thread (the event loop's), if no
        other thread is using it; yields whether it could. Rules while it is held:
        1. A database lock held by another process is not waited for: the operation raises
           `WouldWait` before it has done anything, and is run again in a worker thread.
        2. No WAL checkpoint runs (`wal_autocheckpoint=0`): a checkpoint copies up to a thousand
           pages and syncs the database file; the next write made in a thread does it instead.
           After `_LOOP_WRITES` writes committed here, a passive checkpoint runs in a thread of
           its own, on a connection of its own (`_checkpoint_behind`), so the WAL stays bounded
           when every write fits here.
        """
        if not self._lock.acquire(blocking=False):
            yield False
            return
        try:
            if not self.writable:
                yield True  # reads only, of a file no writer of ours holds
                return
            try:
                self._pragmas_for_loop(True)
            except sqlite3.Error:
                yield False  # closed, say: the worker thread reports it as every operation does
                return
            self._at_once = True
            try:
                yield True
            finally:
                self._at_once = False
        finally:
            self._lock.release()

    def _pragmas_for_loop(self, loop: bool) -> None:
        """Set the connection for operations inside `uncontended` (`loop`) or in a thread, if it
        is not so already (the lock held): two statements saved on each side of most operations."""
        if self._loop_pragmas == loop or not self.writable:
            return
        if loop:
            self.connection.execute('PRAGMA busy_timeout=0')
            self.connection.execute('PRAGMA wal_autocheckpoint=0')
        else:
            self.connection.execute(f'PRAGMA busy_timeout={self._busy_ms}')
            self.connection.execute(f'PRAGMA wal_autocheckpoint={_AUTOCHECKPOINT}')
        self._loop_pragmas = loop

    def _count_loop_write(self) -> None:
        """After a commit (the lock held): count it if it was made in the event loop, and start
        a checkpoint behind every `_LOOP_WRITES` of those (none is running: one at a time)."""
        if not self._at_once:
            self._loop_writes = 0  # a commit in a thread checkpoints by itself when the WAL is long
            return
        self._loop_writes += 1
        if (
            self._loop_writes < _LOOP_WRITES
            or self.path == ':memory:'
            or (self._checkpointer and self._checkpointer.is_alive())
        ):
            return
        self._loop_writes = 0
        self._checkpointer = threading.Thread(target=self._checkpoint_behind, name='threadline-checkpoint', daemon=True)
        self._checkpointer.start()

    def _checkpoint_behind(self) -> None:
        """Two passive checkpoints, which copy WAL pages into the database and sync it without
        blocking readers or writers: the first on a connection of its own, while our writes go
        on; the second, short, holding our connection, so it copies what came meanwhile and the
        next write can start the WAL afresh (SQLite restarts a WAL only once all of it is in the
        database). A failure is left to the next write made in a thread, which checkpoints by
        itself when the WAL is long."""
        try:
            conn = sqlite3.connect(self.path, timeout=self._busy_ms / 1000)
            try:
                conn.execute('PRAGMA wal_checkpoint(PASSIVE)')
            finally:
                conn.close()
            with self._lock:
                self.connection.execute('PRAGMA wal_checkpoint(PASSIVE)')
        except sqlite3.Error:
            pass

    def _failure(self, exc: sqlite3.Error, what: str) -> Exception:
        """The error to raise for `exc`: `WouldWait` for a busy database inside `uncontended`."""
        code = (getattr(exc, 'sqlite_errorcode', None) or 0) & 0xFF  # the primary code of an extended one
        if self._at_once and code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return WouldWait(what)
        return _backend_error(exc, what)

    def _transaction(self) -> Iterator[Any]:
        with self._lock:
            try:
                if not self._at_once:
                    self._pragmas_for_loop(False)
                self.connection.execute('BEGIN IMMEDIATE')
            except sqlite3.Error as exc:
                raise self._failure(exc, 'cannot start a write') from None
            try:
                yield self.connection
            except BaseException as exc:
                self.connection.execute('ROLLBACK')
                if isinstance(exc, sqlite3.Error):
                    raise self._failure(exc, 'the write was rolled back') from None
                raise
            else:
                try:
                    self.connection.execute('COMMIT')
                except sqlite3.Error as exc:
                    self.connection.execute('ROLLBACK')
                    raise self._failure(exc, 'the commit failed; nothing was written') from None
                self._count_loop_write()

    @contextmanager
    def read(self) -> Iterator[Any]:
        with self._lock:
            if not self._at_once:
                try:
                    self._pragmas_for_loop(False)
                except sqlite3.Error as exc:
                    raise self._failure(exc, 'cannot read') from None
            yield from self._reading(self.connection, 'the read failed')

    def _reading(self, conn: sqlite3.Connection, failed: str) -> Iterator[sqlite3.Connection]:
        """One read transaction on `conn` (held by the caller), its errors reported as the store's."""
        try:
            conn.execute('BEGIN')
        except sqlite3.Error as exc:
            raise self._failure(exc, 'cannot read') from None
        try:
            yield conn
        except sqlite3.Error as exc:
            raise self._failure(exc, failed) from None
        finally:
            conn.execute('COMMIT')

    @contextmanager
    def scan_read(self, what: str = 'the search') -> Iterator[Any]:
        """A read that goes through many rows (a search, a whole history's load), on a second
        connection to the file under its own lock: WAL lets it read while the first connection
        writes, so a long scan never delays another tenant's turn, and it fills its own page
        cache, not the writer's (a 20k-message load would push out every page the next step
        write needs). An in-memory or read-only database has one connection: `read()`."""
        if self.path == ':memory:' or not self.writable:
            with self.read() as conn:
                yield conn
            return
        if not self._search_lock.acquire(blocking=not self._at_once):
            raise WouldWait(f'another scan holds the connection {what} needs')
        try:
            if self._searcher is None:
                self._searcher = sqlite3.connect(
                    self.path, check_same_thread=False, isolation_level=None, timeout=self._busy_ms / 1000
                )
            yield from self._reading(self._searcher, f'{what} failed')
        finally:
            self._search_lock.release()

    def insert_messages(self, conn: Connection, rows: list[MessageRow]) -> None:
        """Each row, then its text into the FTS5 tables under the row's id (their rowid)."""
        insert = 'INSERT INTO messages (branch_id, position, conversation_id, run_id, body) VALUES (?, ?, ?, ?, ?) RETURNING id'
        tokens = []
        for branch, position, conversation, run_id, body, text, scope in rows:
            rowid = scalar(conn.execute(insert, (branch, position, conversation, run_id, body)))
            tokens.append((rowid, text, token('c', conversation), token('s', scope)))
        conn.cursor().executemany('INSERT INTO message_fts (rowid, body, ctok, stok) VALUES (?, ?, ?, ?)', tokens)
        grams = [(rowid, grams_of(text), c, s) for rowid, text, c, s in tokens if has_grams(text)]
        if grams:
            conn.cursor().executemany('INSERT INTO message_grams (rowid, grams, ctok, stok) VALUES (?, ?, ?, ?)', grams)

    def _index_grams_of_older_messages(self, conn: Connection) -> None:
        """Give messages indexed before the gram index their gram rows (once, when it is added)."""
        cursor = conn.execute('SELECT rowid, body, ctok, stok FROM message_fts')
        while batch := cursor.fetchmany(5_000):
            grams = [(rowid, grams_of(text), c, s) for rowid, text, c, s in batch if has_grams(text)]
            conn.cursor().executemany('INSERT INTO message_grams (rowid, grams, ctok, stok) VALUES (?, ?, ?, ?)', grams)

    def unindex(self, conn: Connection, conversation_id: str) -> None:
        for table in ('message_fts', 'message_grams'):
            conn.execute(
                f'DELETE FROM {table} WHERE rowid IN (SELECT id FROM messages WHERE conversation_id = ?)',
                (conversation_id,),
            )

    def search(
        self, conn: Connection, terms: list[Term], scope: str | None, conversations: list[str] | None, limit: int
    ) -> list[SearchRow]:
        """`search_fts`, stopped by SQLite itself (a progress handler) once it has worked
        `SEARCH_BUDGET` seconds: the connection is then free for the next writer at once."""
        assert isinstance(conn, sqlite3.Connection)  # this dialect's connections are
        deadline = time.monotonic() + SEARCH_BUDGET
        conn.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
        try:
            return search_fts(conn, terms, scope, conversations, limit)
        except sqlite3.OperationalError:
            if time.monotonic() > deadline:
                raise SearchQueryTooLarge(f'the search ran past its {SEARCH_BUDGET:g} s budget; narrow it') from None
            raise
        finally:
            conn.set_progress_handler(None, 0)


def _open_read_only(path: str, busy_timeout: float) -> sqlite3.Connection:
    """Open an existing database without writing anything. WAL needs its `-shm` file, which a
    read-only directory cannot hold; then the file is read as immutable (no writer can be there)."""
    if not Path(path).is_file():
        raise BackendError(f'no SQLite database at {path}')
    uri = 'file:' + urllib.parse.quote(str(Path(path).resolve()))
    for mode in ('mode=ro', 'immutable=1'):
        connection = sqlite3.connect(
            f'{uri}?{mode}', uri=True, check_same_thread=False, isolation_level=None, timeout=busy_timeout
        )
        try:
            known = _has_table(connection, 'threadline_schema_migrations') or _has_table(
                connection, 'threadline_migrations'
            )
        except sqlite3.OperationalError:  # a damaged file raises DatabaseError, reported by the caller
            connection.close()
            continue
        if not known:
            connection.close()
            raise BackendError(f'{path} is not a Threadline database')
        return connection
    raise BackendError(f'cannot open the SQLite database at {path} for reading')


def _backend_error(exc: sqlite3.Error, what: str) -> StoreError:
    text = str(exc)
    if isinstance(exc, sqlite3.DatabaseError) and ('malformed' in text or 'not a database' in text):
        return CorruptRecordError(
            f'{what}: the database file is damaged ({text}); restore it from a backup with `threadline db restore`'
        )
    if 'locked' in text or 'busy' in text:
        return BackendError(
            f'{what}: the database is locked by another process ({text}); retry, or stop the other writer'
        )
    if 'full' in text:
        return BackendError(f'{what}: the disk is full ({text}); free space and retry')
    return BackendError(f'{what}: {text}')


def _has_table(conn: Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def _run_script(conn: Connection, script: str) -> None:
    """Execute `script` one statement at a time, each cut where SQLite's own parser says a
    statement is complete (so a `;` inside a string, a comment or a trigger body is not a cut)."""
    start = 0
    for end, char in enumerate(script):
        if char == ';' and sqlite3.complete_statement(script[start : end + 1]):
            conn.execute(script[start : end + 1])
            start = end + 1
    if script[start:].strip():
        conn.execute(script[start:])  # comments after the last statement, or one without its `;`
