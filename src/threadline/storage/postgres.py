"""`PostgresStore`: the same log on PostgreSQL, for many stateless app servers over one database.

Driver: psycopg 3 with its connection pool (extra `postgres`: `pip install 'threadline[postgres]'`).
The schema is created idempotently on open under an advisory lock, so app servers starting at
once do not race. Writers to one conversation serialize on a per-conversation advisory lock
held for the transaction. Search uses a `tsvector` column with a GIN index.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Any

from threadline.storage.sql._dialect import Connection, scalar

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

from threadline.exceptions import BackendError, SearchQueryTooLarge, UserError
from threadline.storage._face import AsyncStore
from threadline.storage.index._grams import grams_of
from threadline.storage.index._postgres import best_rows, ranked_source, tsquery
from threadline.storage.index._query import SEARCH_BUDGET, Term, fold
from threadline.storage.index._rank import snippet_of
from threadline.storage.migrations import applied, migrate
from threadline.storage.sql._dialect import MessageRow, SearchRow
from threadline.storage.sql._store import SQLStore
from threadline.trust.sealing import StoreSeal

__all__ = ['PostgresDialect', 'PostgresStore']

_PLACEHOLDER = re.compile(r'\?')


def _driver() -> tuple[ModuleType, ModuleType]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError:
        raise UserError(
            "PostgresStore needs the 'postgres' extra: pip install 'threadline[postgres]' (or uv add 'threadline[postgres]')"
        ) from None
    return psycopg, psycopg_pool


class PostgresStore(AsyncStore[SQLStore]):
    """A conversation and step store on PostgreSQL.

    Pass `url` (a `postgresql://` URL; the store owns a pool and closes it in `close()`), or a
    caller-owned `psycopg_pool.ConnectionPool` as `pool` (the store never closes it).
    `store.sync` is the same store, synchronous; `seal` is the key and tip book that seal its writes
    (default: `StoreSeal.from_environment()`).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        min_size: int = 1,
        max_size: int = 8,
        connect_timeout: float = 10.0,
        seal: StoreSeal | None = None,
    ) -> None:
        self.dialect = PostgresDialect(
            url, pool=pool, min_size=min_size, max_size=max_size, connect_timeout=connect_timeout
        )
        super().__init__(SQLStore(self.dialect, seal))

    def __repr__(self) -> str:
        return 'PostgresStore()'

    @property
    def url(self) -> str | None:
        """The URL the store was opened with (None when it was given a pool)."""
        return self.dialect.url

    def migrations(self) -> list[str]:
        """The names of the migrations applied to this database, in order."""
        return self.dialect.migrations()


class PostgresDialect:
    """PostgreSQL through a psycopg pool: advisory locks, `tsvector` search."""

    name = 'postgres'
    writable = True

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: ConnectionPool[Any] | None = None,
        min_size: int = 1,
        max_size: int = 8,
        connect_timeout: float = 10.0,
    ) -> None:
        psycopg, psycopg_pool = _driver()
        self._psycopg = psycopg
        if (url is None) == (pool is None):
            raise UserError('PostgresStore needs exactly one of url= or pool=')
        self._owns_pool = pool is None
        self.url = url  # what the store was opened with (None for a pool), for a neighbour such as DBOS
        try:
            if pool is None:
                _probe(psycopg, url or '', connect_timeout)  # a wrong URL is reported at once, with its cause
                pool = psycopg_pool.ConnectionPool(
                    url, min_size=min_size, max_size=max_size, open=True, timeout=connect_timeout
                )
                try:
                    pool.wait(timeout=connect_timeout)  # fail now, with a clear error, if the server is not there
                except psycopg_pool.PoolTimeout:
                    pool.close()
                    raise BackendError(
                        f'cannot reach PostgreSQL within {connect_timeout:g}s; check the URL and that the server is up'
                    ) from None
            self._pool = pool
            with pool.connection() as conn:
                info = conn.info
                schema = conn.execute('SELECT current_schema()').fetchone()
                where = f'{info.host}:{info.port}/{info.dbname}?schema={schema[0] if schema else ""}'
            self.location: str | None = 'postgresql://' + where
        except psycopg.Error as exc:
            raise BackendError(
                f'cannot reach PostgreSQL ({_describe(exc)}); check the URL and that the server is up'
            ) from None

    def describe(self) -> str:
        return 'PostgreSQL'

    def close(self) -> None:
        if self._owns_pool:
            self._pool.close()

    def q(self, sql: str) -> str:
        return _PLACEHOLDER.sub('%s', sql)

    def migrate(self, conn: Connection) -> list[str]:
        """A second opener waits on the schema's advisory lock until this transaction ends."""
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('threadline_schema'))")
        return migrate(
            conn,
            'postgres',
            has_table=_has_table,
            run_script=_run_script,
            steps={'index_grams_of_older_messages': self._index_grams_of_older_messages},
            placeholder='%s',
        )

    def migrations(self) -> list[str]:
        """The names of the migrations applied to this database, in order."""
        with self.read() as conn:
            return applied(conn, 'postgres', has_table=_has_table)

    @contextmanager
    def write(self, *, durable: bool = True) -> Iterator[Any]:
        psycopg = self._psycopg
        try:
            with self._pool.connection() as conn, conn.transaction():
                if not durable:
                    # This commit returns before its WAL is flushed; the next synchronous commit
                    # flushes it too. A crash of the server may lose it, never half of it.
                    conn.execute('SET LOCAL synchronous_commit TO OFF')
                yield conn
        except psycopg.Error as exc:
            raise BackendError(f'the write was rolled back: {_describe(exc)}') from None

    @contextmanager
    def read(self) -> Iterator[Any]:
        psycopg = self._psycopg
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY')
                yield conn
        except psycopg.Error as exc:
            raise BackendError(f'the read failed: {_describe(exc)}') from None

    def scan_read(self, what: str = 'the search') -> AbstractContextManager[Connection]:
        """Every read has a pooled connection of its own already."""
        return self.read()

    def lock_conversation(self, conn: Connection, conversation_id: str) -> None:
        conn.execute('SELECT pg_advisory_xact_lock(hashtext(%s))', (conversation_id,))

    def insert_messages(self, conn: Connection, rows: list[MessageRow]) -> None:
        """All rows in one statement, each written once with its search columns. (Indexing by an
        UPDATE after the INSERT left a dead row version behind every message: twice the heap for
        every search to read, and vacuum's work.)"""
        if not rows:
            return
        columns = [list(c) for c in zip(*rows, strict=True)]
        grams = [grams_of(text) for text in columns[5]]
        if not any(grams):
            conn.execute(
                'INSERT INTO messages (branch_id, position, conversation_id, run_id, body, search_text, scope, tsv) '
                "SELECT b, p, c, r, j, t, s, to_tsvector('simple', t) FROM unnest(%s::bigint[], %s::int[], "
                '%s::text[], %s::text[], %s::text[], %s::text[], %s::text[]) AS u(b, p, c, r, j, t, s)',
                columns,
            )
            return
        # The gram rows need the ids the message rows get: (branch, position) names each row.
        conn.execute(
            'WITH u AS (SELECT * FROM unnest(%s::bigint[], %s::int[], %s::text[], %s::text[], %s::text[], '
            '%s::text[], %s::text[], %s::text[]) AS u(b, p, c, r, j, t, s, g)), '
            'added AS (INSERT INTO messages (branch_id, position, conversation_id, run_id, body, search_text, scope, '
            "tsv) SELECT b, p, c, r, j, t, s, to_tsvector('simple', t) FROM u RETURNING id, branch_id, position) "
            "INSERT INTO message_grams (id, scope, grams) SELECT added.id, u.s, to_tsvector('simple', u.g) "
            "FROM added JOIN u ON (u.b, u.p) = (added.branch_id, added.position) WHERE u.g <> ''",
            [*columns, grams],
        )

    def _index_grams_of_older_messages(self, conn: Connection) -> None:
        """Give messages indexed before the gram index their grams (once, when it is added)."""
        rows = conn.execute("SELECT id, search_text FROM messages WHERE search_text ~ '[^[:ascii:]]'").fetchall()
        updates = [(g, rowid) for rowid, text in rows for g in (grams_of(text or ''),) if g]
        if updates:
            conn.cursor().executemany("UPDATE messages SET grams = to_tsvector('simple', %s) WHERE id = %s", updates)

    def unindex(self, conn: Connection, conversation_id: str) -> None:
        """Index entries live on the message rows, so deleting the rows removes them."""

    def search(
        self, conn: Connection, terms: list[Term], scope: str | None, conversations: list[str] | None, limit: int
    ) -> list[SearchRow]:
        """The best `limit` hits (see `_pg_search` for what is ranked and how). A query matching
        a large share of the scope is answered from its newest messages (`_newest_first`). The
        server stops the search after `SEARCH_BUDGET` seconds (`statement_timeout`), even when
        the client that asked is gone."""
        conn.execute(f"SET LOCAL statement_timeout = '{max(1, int(SEARCH_BUDGET * 1000))}ms'")
        try:
            return self._search(conn, terms, scope, conversations, limit)
        except self._psycopg.errors.QueryCanceled:
            raise SearchQueryTooLarge(f'the search ran past its {SEARCH_BUDGET:g} s budget; narrow it') from None

    def _search(
        self, conn: Connection, terms: list[Term], scope: str | None, conversations: list[str] | None, limit: int
    ) -> list[SearchRow]:
        words = [t for t in terms if not t.grams]
        grams = [t for t in terms if t.grams]
        if words and not grams and not conversations and scope is not None and self._frequent(conn, words, scope):
            newest = self._newest_first(conn, words, scope, limit)
            if len(newest) >= limit:
                return newest
            conn.execute('SET LOCAL enable_bitmapscan = on')
        if not conversations:
            # Enough memory for an exact bitmap of the matches: a lossy one rechecks (and
            # detoasts) every row of each page it covers. No JIT: compiling the query (which the
            # GIN match's row estimate triggers on a table not yet analyzed) took longer than
            # running it. One round trip for both.
            conn.execute("SET LOCAL work_mem = '32MB'; SET LOCAL jit = off")
        sql, params = best_rows(*ranked_source(words, grams, scope, conversations), words, grams, limit)
        rows = [tuple(r) for r in conn.execute(sql, params).fetchall()]
        if not grams:
            return rows
        kept = [r for r in rows if all(t.text in fold(r[5] or '') for t in grams)][:limit]
        return [(*r[:5], snippet_of(r[5] or '', grams)) for r in kept]

    def _frequent(self, conn: Connection, words: list[Term], scope: str) -> bool:
        """Whether the query matches at least 1 in `SAMPLE // FREQUENT_SHARE` of the scope's newest
        `SAMPLE` messages (a bounded look through the (scope, id) index)."""
        sql = (
            "SELECT count(*) FILTER (WHERE tsv @@ to_tsquery('simple', %s)) FROM "
            '(SELECT tsv FROM messages WHERE scope = %s ORDER BY id DESC LIMIT %s) recent'
        )
        # Walk the (scope, id) index backwards, whatever the statistics say: a bitmap scan sorts
        # the whole scope first. Bitmap scans stay off for the newest-first query (it walks the
        # same index) and come back for the usual path, which needs them (GIN has no other scan).
        conn.execute('SET LOCAL enable_bitmapscan = off')
        hits = scalar(conn.execute(sql, (tsquery(words), scope, SAMPLE)))
        frequent = bool(hits * FREQUENT_SHARE >= SAMPLE)
        if not frequent:
            conn.execute('SET LOCAL enable_bitmapscan = on')
        return frequent

    def _newest_first(self, conn: Connection, words: list[Term], scope: str, limit: int) -> list[SearchRow]:
        """A query matching a large share of the scope: ranking every match costs what the store
        holds (and says little), so the scope's newest `WINDOW` messages are searched and ranked."""
        query = "to_tsquery('simple', %s)"
        # The snippet is made for the best rows only: ts_headline costs far more than ts_rank.
        sql = (
            'WITH m AS MATERIALIZED (SELECT id, branch_id, position, run_id, tsv FROM messages '
            'WHERE scope = %s ORDER BY id DESC LIMIT %s), '
            f'best AS (SELECT m.id, m.branch_id, m.position, m.run_id, ts_rank_cd(m.tsv, {query}) AS score '
            f'FROM m WHERE m.tsv @@ {query} ORDER BY score DESC, m.id LIMIT %s) '
            f"SELECT best.id, best.branch_id, best.position, best.run_id, best.score, ts_headline('simple', "
            f"t.search_text, {query}, 'StartSel=[, StopSel=], MaxWords=14, MinWords=4') FROM best "
            'JOIN messages t ON t.id = best.id ORDER BY best.score DESC, best.id'
        )
        text = tsquery(words)
        return [tuple(r) for r in conn.execute(sql, (scope, WINDOW, text, text, limit, text)).fetchall()]


SAMPLE, FREQUENT_SHARE, WINDOW = 1_000, 100, 5_000
"""Frequent: the query matches 1 in 100 (or more) of the scope's newest 1,000 messages. Such a
query is answered from the scope's newest 5,000 messages (about 50 matches or more; when they
hold fewer than asked for, every match is ranked instead)."""


def _probe(psycopg: Any, url: str, timeout: float) -> None:
    """Connect once before the pool does: the pool retries a refused connection until its
    timeout and then says only that it timed out, while the first refusal says why (no such
    database, wrong password, no server)."""
    try:
        psycopg.connect(url, connect_timeout=max(1, int(timeout))).close()
    except psycopg.OperationalError as exc:
        raise BackendError(
            f'cannot reach PostgreSQL: {_describe(exc)}; check the URL and that the server is up'
        ) from None


def _describe(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _has_table(conn: Connection, name: str) -> bool:
    row = conn.execute('SELECT to_regclass(%s) IS NOT NULL', (name,)).fetchone()
    return bool(row and row[0])


def _run_script(conn: Connection, script: str) -> None:
    """PostgreSQL takes a whole script in one simple-protocol query (no parameters), inside the
    caller's transaction."""
    if script.strip():
        conn.execute(script)
