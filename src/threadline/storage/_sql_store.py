"""`SQLStore`: the whole storage contract on a SQL database, over a dialect (SQLite, PostgreSQL).

One class, no backend subclasses: what differs between databases lives in the `Dialect` it holds
(`sqlite.SQLiteDialect`, `postgres.PostgresDialect`). The operations are grouped by job in
`_sql_log` (the conversation log), `_steps_sql` (runs, events, snapshots, ledger) and `_audit_sql`
(receipts, waits, audit events, quarantine); all share the rows and write steps of `_sql_base`.
"""

from __future__ import annotations

from ._audit_sql import AuditOps
from ._dialect import Dialect
from ._sql_log import LogOps
from ._steps_sql import StepOps
from ._validate import validated

__all__ = ['SQLStore']


@validated
class SQLStore(LogOps, StepOps, AuditOps):
    """The synchronous store on a SQL database (what `SQLiteStore(...).sync` is)."""

    def __init__(self, dialect: Dialect) -> None:
        self._dialect = dialect

    @property
    def dialect(self) -> Dialect:
        return self._dialect

    def __repr__(self) -> str:
        return f'SQLStore({self._dialect.describe()!r})'

    def close(self) -> None:
        self._dialect.close()

    def migrations(self) -> list[int]:
        """The migration versions applied to this database."""
        return self._dialect.migrations()
