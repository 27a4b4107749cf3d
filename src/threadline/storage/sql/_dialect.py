"""What differs between SQL databases, behind one small interface the SQL store holds.

The store's statements use `?` placeholders and portable SQL; a dialect owns the connection
(transactions for reads and writes), adapts placeholders, locks a conversation for a write, writes
message rows with their full-text index entries and runs its own numbered migrations.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from threadline.exceptions import BackendError
from threadline.storage.index._query import Term

__all__ = ['Connection', 'Cursor', 'Row', 'Dialect', 'MessageRow', 'SearchRow']

MessageRow = tuple[int, int, str, str | None, str, str, str]
"""(branch id, position, conversation id, run id, JSON body, searchable text, scope) of a message."""

SearchRow = tuple[int, int, int, str | None, float, str]
"""(message row id, branch id, position, run id, score, snippet) of one full-text hit."""


Row = tuple[Any, ...]
"""A row as the driver returns it: its column values, each whatever its SQL type holds."""


class Cursor(Protocol):
    """What the SQL store uses of a DB-API cursor; sqlite3's and psycopg's both are one."""

    def fetchone(self) -> Row | None: ...

    def fetchall(self) -> list[Row]: ...

    def fetchmany(self, size: int, /) -> list[Row]: ...

    def executemany(self, sql: str, params: Iterable[Sequence[object]], /) -> object: ...

    def close(self) -> None: ...

    def __iter__(self) -> Iterator[Row]: ...


class Connection(Protocol):
    """What the SQL store uses of a DB-API connection (sqlite3's and psycopg's both are one):
    `execute` for one statement, `cursor().executemany` for a batch."""

    def execute(self, sql: str, params: Sequence[object] = ..., /) -> Cursor: ...

    def cursor(self) -> Cursor: ...


def scalar(cursor: Cursor) -> Any:
    """The first value of the one row an aggregate (`count(*)`, `max(...)`) or a `RETURNING`
    statement always gives."""
    row = cursor.fetchone()
    if row is None:
        raise BackendError('the database returned no row for a statement that always returns one')
    return row[0]


class Dialect(Protocol):
    """A SQL database as the SQL store sees it."""

    name: str
    location: str | None
    """Where the database is, as the tip book names it (None: it dies with the process)."""
    writable: bool

    def write(self, *, durable: bool = True) -> AbstractContextManager[Connection]:
        """A connection inside a write transaction: committed on success, rolled back on error.
        `durable=False` commits without waiting for the disk (see `StepWrite.durable`)."""
        ...

    def read(self) -> AbstractContextManager[Connection]:
        """A connection inside a read-only transaction with a consistent view."""
        ...

    def scan_read(self, what: str = 'the search') -> AbstractContextManager[Connection]:
        """`read()` for one that goes through many rows (a search, a whole history's load; `what`
        names it in an error): where the database allows it, on a connection of its own, so a
        long scan never holds up a write (SQLite: a second connection to the WAL file)."""
        ...

    def q(self, sql: str) -> str:
        """`sql` with its `?` placeholders in the driver's style."""
        ...

    def lock_conversation(self, conn: Connection, conversation_id: str) -> None:
        """Serialize writers to one conversation (a no-op where the write lock is database-wide)."""
        ...

    def insert_messages(self, conn: Connection, rows: list[MessageRow]) -> None:
        """Insert message rows and index their text for search, in the write's transaction."""
        ...

    def unindex(self, conn: Connection, conversation_id: str) -> None:
        """Remove a conversation's messages from the full-text index (before its rows go)."""
        ...

    def search(
        self, conn: Connection, terms: list[Term], scope: str | None, conversations: list[str] | None, limit: int
    ) -> list[SearchRow]:
        """The best `limit` hits for all `terms`, within `conversations` or else `scope`."""
        ...

    def migrate(self, conn: Connection) -> list[str]:
        """Apply, in the write transaction `conn` is in, the migrations this database has not
        seen; returns the names applied now (the store decides from them whether to adopt)."""
        ...

    def migrations(self) -> list[str]:
        """The names of the migrations applied to this database, in order."""
        ...

    def close(self) -> None: ...

    def describe(self) -> str:
        """What the store's repr shows (a path or 'PostgreSQL'), never a password."""
        ...
