"""`SQLiteStore`: the embedded default. One file, WAL journal, numbered migrations run on open.

Writes take the database's write lock up front (`BEGIN IMMEDIATE`), so two processes appending to
one conversation serialize instead of interleaving, and a killed process leaves either the whole
transaction or none of it. Full-text search uses FTS5 with bm25 ranking.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from ..exceptions import BackendError, CorruptRecordError, StoreError
from ._dialect import MessageRow, SearchRow
from ._face import AsyncStore, WouldWait
from ._grams import gram_phrases, grams_of, has_grams
from ._local_rank import MARK_END, MARK_START, rank_locally, snippet_of
from ._neutral import now_text
from ._query import Term, fold
from ._schema import migrations
from ._seal import StoreSeal
from ._sql_base import token
from ._sql_store import SQLStore

__all__ = ['SQLiteDialect', 'SQLiteStore']

GRAM_MIGRATION = 6
_AUTOCHECKPOINT = 1000
"""WAL pages after which a commit made in a thread checkpoints (SQLite's default)."""


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
        super().__init__(SQLStore(self.dialect, seal))

    def __repr__(self) -> str:
        return f'SQLiteStore({self.path!r})'

    def migrations(self) -> list[int]:
        """The migration versions applied to this database."""
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
        self.location = None if self.path == ':memory:' else 'sqlite:' + str(Path(self.path).resolve())
        self.writable = not read_only
        self._lock = threading.RLock()
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
            self.migrate()
        except sqlite3.DatabaseError as exc:
            raise _backend_error(exc, f'cannot open the SQLite database at {self.path}') from None

    def describe(self) -> str:
        return self.path

    def close(self) -> None:
        with self._lock:
            self.connection.close()

    def migrate(self) -> None:
        with self.write() as conn:
            conn.execute(
                'CREATE TABLE IF NOT EXISTS threadline_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)'
            )
            done = {row[0] for row in conn.execute('SELECT version FROM threadline_migrations')}
            for version, script in migrations('sqlite'):
                if version in done:
                    continue
                for statement in script.split(';'):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    'INSERT INTO threadline_migrations (version, applied_at) VALUES (?, ?)', (version, now_text())
                )
                if version == GRAM_MIGRATION:
                    self._index_grams_of_older_messages(conn)

    def q(self, sql: str) -> str:
        return sql

    def lock_conversation(self, conn: Any, conversation_id: str) -> None:
        """`BEGIN IMMEDIATE` already holds the database's write lock."""

    def migrations(self) -> list[int]:
        """The migration versions applied to this database."""
        with self.read() as conn:
            return [r[0] for r in conn.execute('SELECT version FROM threadline_migrations ORDER BY version')]

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
        """
        if not self._lock.acquire(blocking=False):
            yield False
            return
        try:
            if not self.writable:
                yield True  # reads only, of a file no writer of ours holds
                return
            try:
                self.connection.execute('PRAGMA busy_timeout=0')
                self.connection.execute('PRAGMA wal_autocheckpoint=0')
            except sqlite3.Error:
                yield False  # closed, say: the worker thread reports it as every operation does
                return
            self._at_once = True
            try:
                yield True
            finally:
                self._at_once = False
                self.connection.execute(f'PRAGMA busy_timeout={self._busy_ms}')
                self.connection.execute(f'PRAGMA wal_autocheckpoint={_AUTOCHECKPOINT}')
        finally:
            self._lock.release()

    def _failure(self, exc: sqlite3.Error, what: str) -> Exception:
        """The error to raise for `exc`: `WouldWait` for a busy database inside `uncontended`."""
        code = (getattr(exc, 'sqlite_errorcode', None) or 0) & 0xFF  # the primary code of an extended one
        if self._at_once and code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return WouldWait(what)
        return _backend_error(exc, what)

    def _transaction(self) -> Iterator[Any]:
        with self._lock:
            try:
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

    @contextmanager
    def read(self) -> Iterator[Any]:
        with self._lock:
            try:
                self.connection.execute('BEGIN')
            except sqlite3.Error as exc:
                raise self._failure(exc, 'cannot read') from None
            try:
                yield self.connection
            except sqlite3.Error as exc:
                raise self._failure(exc, 'the read failed') from None
            finally:
                self.connection.execute('COMMIT')

    def insert_messages(self, conn: Any, rows: list[MessageRow]) -> None:
        """Each row, then its text into the FTS5 tables under the row's id (their rowid)."""
        insert = 'INSERT INTO messages (branch_id, position, conversation_id, run_id, body) VALUES (?, ?, ?, ?, ?) RETURNING id'
        tokens = []
        for branch, position, conversation, run_id, body, text, scope in rows:
            rowid = conn.execute(insert, (branch, position, conversation, run_id, body)).fetchone()[0]
            tokens.append((rowid, text, token('c', conversation), token('s', scope)))
        conn.executemany('INSERT INTO message_fts (rowid, body, ctok, stok) VALUES (?, ?, ?, ?)', tokens)
        grams = [(rowid, grams_of(text), c, s) for rowid, text, c, s in tokens if has_grams(text)]
        if grams:
            conn.executemany('INSERT INTO message_grams (rowid, grams, ctok, stok) VALUES (?, ?, ?, ?)', grams)

    def _index_grams_of_older_messages(self, conn: Any) -> None:
        """Give messages indexed before the gram index their gram rows (once, when it is added)."""
        cursor = conn.execute('SELECT rowid, body, ctok, stok FROM message_fts')
        while batch := cursor.fetchmany(5_000):
            grams = [(rowid, grams_of(text), c, s) for rowid, text, c, s in batch if has_grams(text)]
            conn.executemany('INSERT INTO message_grams (rowid, grams, ctok, stok) VALUES (?, ?, ?, ?)', grams)

    def unindex(self, conn: Any, conversation_id: str) -> None:
        for table in ('message_fts', 'message_grams'):
            conn.execute(
                f'DELETE FROM {table} WHERE rowid IN (SELECT id FROM messages WHERE conversation_id = ?)',
                (conversation_id,),
            )

    def search(
        self, conn: Any, terms: list[Term], scope: str | None, conversations: list[str] | None, limit: int
    ) -> list[SearchRow]:
        words, grams = _split_terms(terms)
        if conversations:
            return self._scoped(conn, words, grams, conversations, limit)
        if grams:
            return self._gram_wide(conn, words, grams, scope, limit)
        counts = [_bounded_count(conn, _fts(t)) for t in words]
        if any(c > FREQUENT for t, c in zip(words, counts, strict=True) if t.kind == 'word'):
            return self._newest_first(conn, words, scope, limit, counts)
        terms_match = ' AND '.join(_fts(t) for t in words)
        if len(words) > 1:
            ranked = self._intersection_ranked(conn, words, terms_match, counts, scope, limit)
            if ranked is not None:
                return ranked
        # Store-wide: intersecting with a scope token is slow when the scope is large, so rank the
        # terms alone and keep the hits in scope, fetching more while too few are; a scope that
        # holds few of the hits is then found through its token instead.
        fetch = max(limit * 2, 20)
        while fetch <= 2000:
            rows, exhausted = self._ranked_with_count(conn, terms_match, fetch, scope)
            if len(rows) >= limit or exhausted:
                return rows[:limit]
            fetch *= 4
        return self._ranked(conn, f'{terms_match} AND stok : "{token("s", scope or "")}"', limit, scope=None)

    def _scoped(
        self, conn: Any, words: list[Term], grams: list[Term], conversations: list[str], limit: int
    ) -> list[SearchRow]:
        """Matches in `conversations` (a conversation and the ones it forked from), ranked by
        their own statistics (see `_local_rank`): every query here costs what those
        conversations hold, whatever the rest of the store holds."""
        within = 'ctok : (' + ' OR '.join(f'"{token("c", c)}"' for c in conversations) + ')'
        match = ' AND '.join([*(_fts(t) for t in words), within])
        highlighted = 'SELECT rowid, highlight(message_fts, 0, ?, ?) FROM message_fts WHERE message_fts MATCH ?'
        if grams:
            ids = _gram_rows(conn, grams, within)
            if not ids:
                return []
            marks = ','.join('?' * len(ids))
            if words:
                sql, params = f'{highlighted} AND rowid IN ({marks})', (MARK_START, MARK_END, match, *ids)
            else:  # nothing for highlight() to mark (rank_locally marks the grams): the text will do
                sql, params = f'SELECT rowid, body FROM message_fts WHERE rowid IN ({marks})', tuple(ids)
            hits = [h for h in conn.execute(sql, params).fetchall() if _holds(h[1], grams)]
        else:
            hits = conn.execute(highlighted, (MARK_START, MARK_END, match)).fetchall()
        if not hits:
            return []
        total = _count(conn, 'message_fts', within)
        every = [*words, *grams]
        df = [len(hits)] if len(every) == 1 else [_term_count(conn, t, within) for t in every]
        return self._attach(conn, rank_locally(hits, every, total, df, limit), None)

    def _intersection_ranked(
        self, conn: Any, words: list[Term], match: str, df: list[int], scope: str | None, limit: int
    ) -> list[SearchRow] | None:
        """Several terms, none frequent: their few common matches ranked by BM25 here, with the
        document frequencies just counted. FTS5's `bm25()` would walk every term's full list a
        second time to count them. None when the intersection is too large to rank here."""
        hits = conn.execute(
            'SELECT rowid, highlight(message_fts, 0, ?, ?) FROM message_fts WHERE message_fts MATCH ? LIMIT ?',
            (MARK_START, MARK_END, match, INTERSECTION + 1),
        ).fetchall()
        if len(hits) > INTERSECTION:
            return None
        if not hits:
            return []
        rows = {row[0]: row for row in self._attach(conn, [(h[0], 0.0, '') for h in hits], scope)}
        total = int(conn.execute('SELECT max(id) FROM messages').fetchone()[0] or 1)
        ranked = rank_locally([h for h in hits if h[0] in rows], words, total, df, limit)
        return [(*rows[rowid][:4], score, snippet) for rowid, score, snippet in ranked]

    def _newest_first(
        self, conn: Any, words: list[Term], scope: str | None, limit: int, df: list[int]
    ) -> list[SearchRow]:
        """A query with a frequent word (held by more than `FREQUENT` messages): FTS5's bm25 would
        count and score every one of them, which costs what the store holds, and a word in most
        messages says little about which one is wanted. So the scope's newest `WINDOW` matches are
        ranked by BM25 (store-wide N, document frequencies counted up to the cutoff)."""
        match = ' AND '.join([*(_fts(t) for t in words), f'stok : "{token("s", scope or "")}"'])
        hits = conn.execute(
            'SELECT rowid, highlight(message_fts, 0, ?, ?) FROM message_fts WHERE message_fts MATCH ? '
            'ORDER BY rowid DESC LIMIT ?',
            (MARK_START, MARK_END, match, WINDOW),
        ).fetchall()
        if not hits:
            return []
        total = int(conn.execute('SELECT max(id) FROM messages').fetchone()[0] or 1)
        return self._attach(conn, rank_locally(hits, words, total, df, limit), scope)

    def _gram_wide(
        self, conn: Any, words: list[Term], grams: list[Term], scope: str | None, limit: int
    ) -> list[SearchRow]:
        """Store-wide with CJK or symbol terms: ranked by the (small) gram index within the scope's
        token, then kept where the word terms match too. A gram term held by more than
        `FREQUENT` messages (`환불` in a Korean support desk) is answered as a frequent word is:
        the scope's newest `WINDOW` matches, ranked here (BM25 needs every match's statistics)."""
        match = ' AND '.join([*(_gram_fts(t) for t in grams), f'stok : "{token("s", scope or "")}"'])
        counts = [_bounded_count(conn, _gram_fts(t), table='message_grams') for t in grams]
        frequent = max(counts) > FREQUENT
        if frequent:
            ranked = conn.execute(
                'SELECT rowid, 0.0 FROM message_grams WHERE message_grams MATCH ? ORDER BY rowid DESC LIMIT ?',
                (match, WINDOW),
            ).fetchall()
        else:
            ranked = conn.execute(
                'SELECT rowid, -rank FROM message_grams WHERE message_grams MATCH ? ORDER BY rank LIMIT ?',
                (match, limit * 5),
            ).fetchall()
        if words and ranked:
            marks = ','.join('?' * len(ranked))
            keep = {
                r[0]
                for r in conn.execute(
                    f'SELECT rowid FROM message_fts WHERE message_fts MATCH ? AND rowid IN ({marks})',
                    (' AND '.join(_fts(t) for t in words), *(r[0] for r in ranked)),
                )
            }
            ranked = [r for r in ranked if r[0] in keep]
        if not ranked:
            return []
        marks = ','.join('?' * len(ranked))
        texts = dict(
            conn.execute(f'SELECT rowid, body FROM message_fts WHERE rowid IN ({marks})', [r[0] for r in ranked])
        )
        ranked = [r for r in ranked if _holds(texts[r[0]], grams)]
        if frequent:
            total = int(conn.execute('SELECT max(id) FROM messages').fetchone()[0] or 1)
            hits = rank_locally([(rowid, texts[rowid]) for rowid, _ in ranked], grams, total, counts, limit)
        else:
            hits = [(rowid, score, snippet_of(texts[rowid], grams)) for rowid, score in ranked[:limit]]
        return self._attach(conn, hits, scope)

    def _ranked_with_count(self, conn: Any, match: str, fetch: int, scope: str | None) -> tuple[list[SearchRow], bool]:
        hits = conn.execute(
            "SELECT rowid, -rank, snippet(message_fts, 0, '[', ']', '...', 12) FROM message_fts "
            'WHERE message_fts MATCH ? ORDER BY rank LIMIT ?',
            (match, fetch),
        ).fetchall()
        return self._attach(conn, hits, scope), len(hits) < fetch

    def _ranked(self, conn: Any, match: str, limit: int, scope: str | None) -> list[SearchRow]:
        hits = conn.execute(
            "SELECT rowid, -rank, snippet(message_fts, 0, '[', ']', '...', 12) FROM message_fts "
            'WHERE message_fts MATCH ? ORDER BY rank LIMIT ?',
            (match, limit),
        ).fetchall()
        return self._attach(conn, hits, scope)

    def _attach(self, conn: Any, hits: list[Any], scope: str | None) -> list[SearchRow]:
        """Join FTS hits (in rank order) with their message rows, keeping those in `scope`."""
        if not hits:
            return []
        marks = ','.join('?' * len(hits))
        sql = (
            f'SELECT m.id, m.branch_id, m.position, m.run_id FROM messages m JOIN conversations c '
            f'ON c.id = m.conversation_id WHERE m.id IN ({marks})'
        )
        params: list[Any] = [h[0] for h in hits]
        if scope is not None:
            sql += ' AND c.scope = ?'
            params.append(scope)
        rows = {r[0]: r for r in conn.execute(sql, params).fetchall()}
        return [(h[0], rows[h[0]][1], rows[h[0]][2], rows[h[0]][3], h[1], h[2]) for h in hits if h[0] in rows]


FREQUENT = 10_000
"""A word held by more messages than this is ranked within the newest matches (`_newest_first`)."""
WINDOW = 200
INTERSECTION = 500
"""Up to this many common matches of several terms are ranked here (`_intersection_ranked`)."""


def _bounded_count(conn: Any, expression: str, table: str = 'message_fts') -> int:
    """How many messages match, counted no further than `FREQUENT + 1` (the cost is bounded)."""
    sql = f'SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT ?)'
    return int(conn.execute(sql, (expression, FREQUENT + 1)).fetchone()[0])


def _split_terms(terms: list[Term]) -> tuple[list[Term], list[Term]]:
    """Word terms for the word index, and gram terms (CJK, symbols) for the gram index. A gram
    term's other characters (`ipad` in `ipad용`) are checked in the text itself (`_holds`):
    `unicode61` keeps `ipad용` as one word, so the word index cannot answer for `ipad`."""
    return [t for t in terms if not t.grams], [t for t in terms if t.grams]


def _holds(text: str, grams: list[Term]) -> bool:
    """Whether the (possibly highlighted) text holds every gram term as written, case-folded."""
    plain = fold(text.replace(MARK_START, '').replace(MARK_END, ''))
    return all(term.text in plain for term in grams)


def _gram_fts(term: Term) -> str:
    """A gram term as an FTS5 expression on the gram column: each run's tokens in a row."""
    phrases = [phrase for word in term.words for phrase in gram_phrases(word)]
    return ' AND '.join(f'grams : "{" ".join(tokens)}"' for tokens in phrases)


def _gram_rows(conn: Any, grams: list[Term], within: str) -> list[int]:
    match = ' AND '.join([*(_gram_fts(t) for t in grams), within])
    return [r[0] for r in conn.execute('SELECT rowid FROM message_grams WHERE message_grams MATCH ?', (match,))]


def _count(conn: Any, table: str, match: str) -> int:
    return int(conn.execute(f'SELECT count(*) FROM {table} WHERE {table} MATCH ?', (match,)).fetchone()[0])


def _term_count(conn: Any, term: Term, within: str) -> int:
    if term.grams:
        return len(_gram_rows(conn, [term], within))
    return _count(conn, 'message_fts', f'{_fts(term)} AND {within}')


def _fts(term: Term) -> str:
    """One term as an FTS5 expression on the body column. A term holds only word characters and
    spaces (see `_query`), so quoting it cannot reach FTS5's syntax."""
    expression = f'body : "{term.text}"'
    return expression + ' *' if term.kind == 'prefix' else expression


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
            connection.execute('SELECT count(*) FROM threadline_migrations').fetchone()
        except sqlite3.OperationalError as exc:
            connection.close()
            if 'no such table' in str(exc):
                raise BackendError(f'{path} is not a Threadline database') from None
            continue
        return connection
    raise BackendError(f'cannot open the SQLite database at {path} for reading')


def _backend_error(exc: sqlite3.Error, what: str) -> StoreError:
    text = str(exc)
    if isinstance(exc, sqlite3.DatabaseError) and ('malformed' in text or 'not a database' in text):
        return CorruptRecordError(f'{what}: the database file is damaged ({text}); restore it from a backup')
    if 'locked' in text or 'busy' in text:
        return BackendError(
            f'{what}: the database is locked by another process ({text}); retry, or stop the other writer'
        )
    if 'full' in text:
        return BackendError(f'{what}: the disk is full ({text}); free space and retry')
    return BackendError(f'{what}: {text}')
