"""`PostgresStore`: the same log on PostgreSQL, for many stateless app servers over one database.

Driver: psycopg 3 with its connection pool (extra `postgres`: `pip install 'threadline[postgres]'`).
The schema is created idempotently on open under an advisory lock, so app servers starting at
once do not race. Writers to one conversation serialize on a per-conversation advisory lock
held for the transaction. Search uses a `tsvector` column with a GIN index.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

from ..exceptions import BackendError, UserError
from ._dialect import SearchRow
from ._face import AsyncStore
from ._neutral import now_text
from ._query import Term
from ._schema import migrations
from ._seal import StoreSeal
from ._sql_store import SQLStore

__all__ = ['PostgresDialect', 'PostgresStore']

_PLACEHOLDER = re.compile(r'\?')


def _driver() -> Any:
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

    def migrations(self) -> list[int]:
        """The migration versions applied to this database."""
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
        try:
            if pool is None:
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
            self.migrate()
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

    def migrate(self) -> None:
        with self.write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('threadline_schema'))")
            conn.execute(
                'CREATE TABLE IF NOT EXISTS threadline_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)'
            )
            done = {row[0] for row in conn.execute('SELECT version FROM threadline_migrations').fetchall()}
            for version, script in migrations('postgres'):
                if version not in done:
                    conn.execute(script)
                    conn.execute(
                        'INSERT INTO threadline_migrations (version, applied_at) VALUES (%s, %s)', (version, now_text())
                    )

    def migrations(self) -> list[int]:
        """The migration versions applied to this database."""
        with self.read() as conn:
            return [r[0] for r in conn.execute('SELECT version FROM threadline_migrations ORDER BY version').fetchall()]

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

    def lock_conversation(self, conn: Any, conversation_id: str) -> None:
        conn.execute('SELECT pg_advisory_xact_lock(hashtext(%s))', (conversation_id,))

    def index(self, conn: Any, rows: list[tuple[int, str, str, str]]) -> None:
        if rows:
            with conn.cursor() as cursor:
                cursor.executemany(
                    "UPDATE messages SET scope = %s, search_text = %s, tsv = to_tsvector('simple', %s) WHERE id = %s",
                    [(scope, text, text, rowid) for rowid, text, _, scope in rows],
                )

    def unindex(self, conn: Any, conversation_id: str) -> None:
        """Index entries live on the message rows, so deleting the rows removes them."""

    def search(
        self, conn: Any, terms: list[Term], scope: str | None, conversations: list[str] | None, limit: int
    ) -> list[SearchRow]:
        if conversations:
            return self._scoped(conn, terms, conversations, limit)
        sql = (
            'SELECT m.id, m.branch_id, m.position, m.run_id, ts_rank(m.tsv, q) AS score, '
            "ts_headline('simple', m.search_text, q, 'StartSel=[, StopSel=], MaxWords=14, MinWords=4') "
            "FROM messages m, to_tsquery('simple', %s) q WHERE m.tsv @@ q"
        )
        params: list[Any] = [_tsquery(terms)]
        if scope is not None:
            sql += ' AND m.scope = %s'
            params.append(scope)
        sql += ' ORDER BY score DESC, m.id LIMIT %s'
        params.append(limit)
        return [tuple(r) for r in conn.execute(sql, params).fetchall()]

    def _scoped(self, conn: Any, terms: list[Term], conversations: list[str], limit: int) -> list[SearchRow]:
        """Matches in `conversations` only. The conversation's rows are taken first (a
        materialized CTE, so the planner cannot start from the GIN index, whose posting list for
        a frequent word grows with the store): the query costs what the conversation holds.
        `ts_rank` reads only the row it ranks, so no other conversation's words shape a score."""
        sql = (
            'WITH c AS MATERIALIZED (SELECT id, branch_id, position, run_id, tsv, search_text FROM messages '
            'WHERE conversation_id = ANY(%s)) '
            'SELECT c.id, c.branch_id, c.position, c.run_id, ts_rank(c.tsv, q) AS score, '
            "ts_headline('simple', c.search_text, q, 'StartSel=[, StopSel=], MaxWords=14, MinWords=4') "
            "FROM c, to_tsquery('simple', %s) q WHERE c.tsv @@ q ORDER BY score DESC, c.id LIMIT %s"
        )
        return [tuple(r) for r in conn.execute(sql, (conversations, _tsquery(terms), limit)).fetchall()]


def _tsquery(terms: list[Term]) -> str:
    """The terms as a `to_tsquery` expression: words and prefixes (`'refun':*`) joined by `&`, a
    phrase's words by `<->`. Each word is quoted (a term holds only word characters; see `_query`)."""

    def quoted(word: str) -> str:
        return "'" + word.replace("'", "''") + "'"

    parts = []
    for term in terms:
        if term.kind == 'phrase':
            parts.append('(' + ' <-> '.join(quoted(w) for w in term.words) + ')')
        else:
            parts.append(quoted(term.text) + (':*' if term.kind == 'prefix' else ''))
    return ' & '.join(parts)


def _describe(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
