"""`SQLStore`: the whole storage contract on a SQL database, over a dialect (SQLite, PostgreSQL).

One class, no backend subclasses: what differs between databases lives in the `Dialect` it holds
(`sqlite.SQLiteDialect`, `postgres.PostgresDialect`). The operations are grouped by job in
`_sql_log` (the conversation log), `_steps_sql` (runs, events, snapshots, ledger) and `_audit_sql`
(receipts, waits, audit events, quarantine); all share the rows and write steps of `_sql_base`.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime

from threadline.storage._neutral import now_text
from threadline.storage._records import EveryScope
from threadline.storage._validate import validated
from threadline.storage.sql._audit import AuditOps
from threadline.storage.sql._dialect import Dialect
from threadline.storage.sql._leases import LeaseOps
from threadline.storage.sql._log import LogOps
from threadline.storage.sql._notebooks import NotebookOps
from threadline.storage.sql._seal import all_idents
from threadline.storage.sql._steps import StepOps
from threadline.trust.sealing import StoreSeal

__all__ = ['SQLStore']


@validated
class SQLStore(LogOps, StepOps, AuditOps, NotebookOps, LeaseOps):
    """The synchronous store on a SQL database (what `SQLiteStore(...).sync` is)."""

    def prune(
        self, *, older_than: datetime | None = None, keep_last: int | None = None, scope: str | EveryScope
    ) -> list[str]:
        """The log's prune, then (with `older_than`) the scope's notebooks not written since."""
        pruned = super().prune(older_than=older_than, keep_last=keep_last, scope=scope)
        if older_than is not None:
            self._prune_notebooks(older_than, scope if isinstance(scope, str) else None)
        return pruned

    def __init__(self, dialect: Dialect, seal: StoreSeal | None = None) -> None:
        self._dialect = dialect
        self._tx = threading.local()
        self._location = dialect.location
        if seal is None:
            seal = (
                StoreSeal.ephemeral()
                if dialect.location is None
                else StoreSeal.from_environment(create=dialect.writable)
            )
        self._seal = seal
        self._sealed_schema = dialect.writable or 'seals' in dialect.migrations()
        if dialect.writable:
            self._adopt()

    @property
    def seal(self) -> StoreSeal:
        """The key and tip book that seal this store's writes."""
        return self._seal

    def _adopt(self) -> None:
        """Seal, once, every conversation written before this store had seals (the re-chain
        migration), and record that it did in `threadline_meta` and in the tip book. A store the
        tip book already saw sealed is not adopted again: records found without seals then stay
        unsealed and fail `verify()`, instead of being blessed."""
        with self._read() as conn:
            if self._one(conn, "SELECT 1 FROM threadline_meta WHERE key = 'seals'") is not None:
                return
        seen = self._seal.tips.adoption(self._location) if self._seal.tips and self._location else None
        adopted = 0
        self._tx.adopting = seen is None
        try:
            with self._write() as conn:
                self._dialect.lock_conversation(conn, 'threadline seal adoption')
                if self._one(conn, "SELECT 1 FROM threadline_meta WHERE key = 'seals'") is not None:
                    return
                if seen is None:
                    for (conversation_id,) in self._all(
                        conn,
                        'SELECT id FROM conversations c WHERE NOT EXISTS '
                        '(SELECT 1 FROM seals s WHERE s.conversation_id = c.id) ORDER BY id',
                    ):
                        self._touch(conversation_id, *all_idents(self, conn, conversation_id))
                        adopted += 1
                record = {'at': now_text(), 'key_id': self._seal.key_id, 'adopted': adopted, 'book_saw': seen}
                self._exec(
                    conn,
                    "INSERT INTO threadline_meta (key, value) VALUES ('seals', ?) ON CONFLICT DO NOTHING",
                    (json.dumps(record),),
                )
        finally:
            self._tx.adopting = False
        if seen is None and self._seal.tips and self._location and self._seal.key_id:
            self._seal.tips.record_adoption(self._location, self._seal.key_id, adopted)

    @property
    def dialect(self) -> Dialect:
        return self._dialect

    def __repr__(self) -> str:
        return f'SQLStore({self._dialect.describe()!r})'

    def close(self) -> None:
        self._dialect.close()

    def migrations(self) -> list[str]:
        """The names of the migrations applied to this database, in order."""
        return self._dialect.migrations()
