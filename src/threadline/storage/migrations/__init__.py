"""Named schema migrations, run by one runner for every SQL dialect.

`MIGRATIONS` is the order. Each migration has a name and one script per dialect
(`migrations/<dialect>/<name>.sql`, written in that dialect's own SQL, never derived from another
dialect's text); a dialect that needs nothing for a migration has an empty script that says why,
so both dialects carry the same names. A migration that also needs Python (filling a new index
from rows written before it) names a step, which each dialect registers under that name.

Rules:
- A store records each migration it applied, by name, in `threadline_schema_migrations`, in the
  transaction that applied it; `migrate` runs the missing ones in order, and a second process
  opening the same store at the same time waits for the first (the dialect's write lock).
- Stores created before names existed recorded numbers in `threadline_migrations`; each
  migration keeps the number it had per dialect (`legacy`), so those stores read as the names they
  applied and upgrade from there. That table is read, never written again.
- A script is handed whole to the dialect (`Dialect.run_script`), which executes it statement by
  statement with the database's own parser: nothing here splits SQL text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from typing import Literal

from threadline.storage.sql._dialect import Connection

__all__ = ['MIGRATIONS', 'DialectName', 'Migration', 'applied', 'migrate', 'script']

DialectName = Literal['sqlite', 'postgres']


@dataclass(frozen=True)
class Migration:
    """One schema change: its `name`, the number it had per dialect before names (`legacy`), and
    the Python `step` to run after its script, if any."""

    name: str
    legacy: Mapping[DialectName, int] = field(default_factory=dict)
    step: str | None = None


MIGRATIONS: tuple[Migration, ...] = (
    Migration('conversation_log_and_steps', {'sqlite': 1, 'postgres': 1}),
    Migration('full_text_search', {'sqlite': 2, 'postgres': 2}),
    Migration('audit_records', {'sqlite': 3, 'postgres': 3}),
    Migration('seals', {'sqlite': 4, 'postgres': 4}),
    Migration('batches_by_run', {'sqlite': 5, 'postgres': 5}),
    Migration('gram_index', {'sqlite': 6, 'postgres': 6}, step='index_grams_of_older_messages'),
    Migration('scope_newest', {'postgres': 7}),
    Migration('notebooks', {'sqlite': 7, 'postgres': 8}),
    Migration('turn_leases', {'sqlite': 8, 'postgres': 9}),
    Migration('gin_pending_lists', {'postgres': 10}),
    Migration('gram_table', {'postgres': 11}),
    Migration('ledger_by_status', {'sqlite': 9, 'postgres': 12}),
    Migration('store_identity'),
    Migration('turn_queue'),
    Migration('step_lookups'),
    Migration('run_lineage'),
    Migration('snapshot_pending'),
    Migration('seals_by_key'),
)

_TABLE = 'threadline_schema_migrations'
_LEGACY_TABLE = 'threadline_migrations'


def script(migration: Migration, dialect: DialectName) -> str:
    """The SQL text of `migration` for `dialect` (empty where the dialect needs nothing)."""
    return resources.files(__name__).joinpath(dialect, f'{migration.name}.sql').read_text()


def applied(conn: Connection, dialect: DialectName, *, has_table: Callable[[Connection, str], bool]) -> list[str]:
    """The names of the migrations this database has applied, in `MIGRATIONS` order (reading a
    store made before names from its numbers). Writes nothing."""
    names: set[str] = set()
    if has_table(conn, _TABLE):
        names.update(row[0] for row in conn.execute(f'SELECT name FROM {_TABLE}').fetchall())
    if has_table(conn, _LEGACY_TABLE):
        numbers = {row[0] for row in conn.execute(f'SELECT version FROM {_LEGACY_TABLE}').fetchall()}
        names.update(m.name for m in MIGRATIONS if m.legacy.get(dialect) in numbers)
    return [m.name for m in MIGRATIONS if m.name in names]


def migrate(
    conn: Connection,
    dialect: DialectName,
    *,
    has_table: Callable[[Connection, str], bool],
    run_script: Callable[[Connection, str], None],
    steps: Mapping[str, Callable[[Connection], None]],
    placeholder: str,
) -> list[str]:
    """Apply, in `conn`'s transaction, every migration this database has not applied; returns
    the names applied now. `placeholder` is the dialect's parameter marker (`?` or `%s`)."""
    missing = [m for m in MIGRATIONS if m.step is not None and m.step not in steps]
    if missing:
        raise RuntimeError(f'the {dialect} dialect registers no step {missing[0].step!r}')  # a bug, not bad input
    conn.execute(f'CREATE TABLE IF NOT EXISTS {_TABLE} (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)')
    recorded = {row[0] for row in conn.execute(f'SELECT name FROM {_TABLE}').fetchall()}
    done = set(applied(conn, dialect, has_table=has_table))
    now: list[str] = []
    for migration in (m for m in MIGRATIONS if m.name not in done):
        run_script(conn, script(migration, dialect))
        if migration.step is not None:
            steps[migration.step](conn)
        now.append(migration.name)
    stamp = datetime.now(tz=UTC).isoformat()
    for name in _unrecorded(done | set(now), recorded):  # a legacy store's numbers, once, as names
        conn.execute(f'INSERT INTO {_TABLE} (name, applied_at) VALUES ({placeholder}, {placeholder})', (name, stamp))
    return now


def _unrecorded(done: Iterable[str], recorded: set[str]) -> list[str]:
    finished = set(done)
    return [m.name for m in MIGRATIONS if m.name in finished and m.name not in recorded]
