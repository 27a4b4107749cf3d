"""What differs between SQL databases, behind one small interface the SQL store holds.

The store's statements use `?` placeholders and portable SQL; a dialect owns the connection
(transactions for reads and writes), adapts placeholders, locks a conversation for a write, writes
message rows with their full-text index entries and runs its own numbered migrations.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

from threadline.storage.index._query import Term

__all__ = ['Dialect', 'MessageRow', 'SearchRow']

MessageRow = tuple[int, int, str, str | None, str, str, str]
"""(branch id, position, conversation id, run id, JSON body, searchable text, scope) of a message."""

SearchRow = tuple[int, int, int, str | None, float, str]
"""(message row id, branch id, position, run id, score, snippet) of one full-text hit."""


class Dialect(Protocol):
    """A SQL database as the SQL store sees it."""

    name: str
    location: str | None
    """Where the database is, as the tip book names it (None: it dies with the process)."""
    writable: bool

    def write(self, *, durable: bool = True) -> AbstractContextManager[Any]:
        """A connection inside a write transaction: committed on success, rolled back on error.
        `durable=False` commits without waiting for the disk (see `StepWrite.durable`)."""
        ...

    def read(self) -> AbstractContextManager[Any]:
        """A connection inside a read-only transaction with a consistent view."""
        ...

    def q(self, sql: str) -> str:
        """`sql` with its `?` placeholders in the driver's style."""
        ...

    def lock_conversation(self, conn: Any, conversation_id: str) -> None:
        """Serialize writers to one conversation (a no-op where the write lock is database-wide)."""
        ...

    def insert_messages(self, conn: Any, rows: list[MessageRow]) -> None:
        """Insert message rows and index their text for search, in the write's transaction."""
        ...

    def unindex(self, conn: Any, conversation_id: str) -> None:
        """Remove a conversation's messages from the full-text index (before its rows go)."""
        ...

    def search(
        self, conn: Any, terms: list[Term], scope: str | None, conversations: list[str] | None, limit: int
    ) -> list[SearchRow]:
        """The best `limit` hits for all `terms`, within `conversations` or else `scope`."""
        ...

    def migrate(self) -> None:
        """Apply the migrations this database has not seen."""
        ...

    def migrations(self) -> list[str]:
        """The names of the migrations applied to this database, in order."""
        ...

    def close(self) -> None: ...

    def describe(self) -> str:
        """What the store's repr shows (a path or 'PostgreSQL'), never a password."""
        ...
