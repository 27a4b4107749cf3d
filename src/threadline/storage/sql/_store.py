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
from threadline.storage.sql._dialect import Connection, Dialect
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
        if dialect.writable:
            self._open_for_writing()
        names = dialect.migrations()
        if not dialect.writable:
            with self._read() as conn:
                self._identify(conn, known='store_identity' in names)
        self._sealed_schema = 'seals' in names

    @property
    def seal(self) -> StoreSeal:
        """The key and tip book that seal this store's writes."""
        return self._seal

    def _open_for_writing(self) -> None:
        """Migrate, learn the store's id, and adopt a store that predates seals: one transaction,
        so a crash leaves either the old store or all of it done."""
        self._tx.adopting = False
        try:
            with self._write() as conn:
                now = self._dialect.migrate(conn)
                self._identify(conn, known=True)
                if self._one(conn, "SELECT 1 FROM threadline_meta WHERE key = 'seals'") is None:
                    self._adopt(conn, legacy='seals' in now)
        finally:
            self._tx.adopting = False

    def _identify(self, conn: Connection, *, known: bool) -> None:
        """Key the tip book by the store's id, which moves and host spellings keep (tips recorded
        under the old location are carried over once). `known`: the id's migration was applied."""
        row = self._one(conn, "SELECT value FROM threadline_meta WHERE key = 'store_id'") if known else None
        if row is None or self._location is None:
            return  # a store that dies with the process, or one made before ids: keyed by location
        key = f'store:{row[0]}'
        if self._seal.tips is not None:
            self._seal.tips.carry_over(self._location, key)
        self._location = key

    def _adopt(self, conn: Connection, *, legacy: bool) -> None:
        """Seal every conversation of a store written before seals existed, and record it.

        Rules:
        - Only a store whose seal migration is applied now, in this transaction, is adopted: it
          never had seals. A store that had the migration and lost its record of seals was
          edited; nothing in it is sealed, so every conversation whose seals were removed fails
          `verify()` ('no_seals'), and the record says the adoption was refused.
        - The record (`threadline_meta` 'seals') and the tip book's note say which key adopted
          how many conversations; the tip book's note is kept, never used to decide.
        """
        seen = self._seal.tips.adoption(self._location) if self._seal.tips and self._location else None
        adopted = 0
        if legacy:
            self._dialect.lock_conversation(conn, 'threadline seal adoption')
            self._tx.adopting = True
            for (conversation_id,) in self._all(
                conn,
                'SELECT id FROM conversations c WHERE NOT EXISTS '
                '(SELECT 1 FROM seals s WHERE s.conversation_id = c.id) ORDER BY id',
            ):
                self._touch(conversation_id, *all_idents(self, conn, conversation_id))
                adopted += 1
        record: dict[str, object] = {
            'at': now_text(),
            'key_id': self._seal.key_id,
            'adopted': adopted,
            'book_saw': seen,
        }
        if not legacy:
            record['refused'] = 'the store had seals (its seal migration ran before), but their record was removed'
        self._exec(
            conn,
            "INSERT INTO threadline_meta (key, value) VALUES ('seals', ?) ON CONFLICT DO NOTHING",
            (json.dumps(record),),
        )
        if legacy and self._seal.tips and self._location and self._seal.key_id:
            self._seal.tips.record_adoption(self._location, self._seal.key_id, adopted)

    def record_restore(self, source: str) -> int:
        """Record in the tip book that this database was restored from a backup (`source` names
        it): see `TipBook.record_restore`. Returns how many tips were forgotten."""
        if self._seal.tips is None or self._location is None:
            return 0
        return self._seal.tips.record_restore(self._location, source)

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

    def unknown_seal_keys(self) -> list[str]:
        """The key ids of stored seals this store holds no key for (sorted; at most 64): every
        audit of a conversation they seal reports it untrusted, so a server says so when it
        starts. Each distinct id costs one step down the `seals_by_key` index, however many
        seals there are."""
        held = set() if self._seal.keys is None else {k.key_id for k in self._seal.keys.keys}
        with self._read() as conn:
            rows = self._all(conn, _KEY_IDS, ())
        return sorted(str(row[0]) for row in rows if row[0] is not None and row[0] not in held)


# The distinct key ids of `seals`, one index seek each (a loose index scan: both SQLite and
# PostgreSQL would otherwise read every seal row to find them), at most 64.
_KEY_IDS = (
    'WITH RECURSIVE ids(key_id, n) AS ('
    'SELECT MIN(key_id), 1 FROM seals '
    'UNION ALL SELECT (SELECT MIN(s.key_id) FROM seals s WHERE s.key_id > ids.key_id), n + 1 '
    'FROM ids WHERE ids.key_id IS NOT NULL AND n < 64) '
    'SELECT key_id FROM ids'
)
