"""Migrations are named, both dialects carry every name, and one runner applies them: scripts go
to the database whole (a `;` in a string, a comment or a trigger body is not a statement's end)."""

from __future__ import annotations

import sqlite3
from importlib import resources
from pathlib import Path

import pytest

from threadline.storage import SQLiteStore
from threadline.storage.migrations import MIGRATIONS, applied, migrate, script
from threadline.storage.sqlite import _has_table, _run_script


@pytest.mark.parametrize('dialect', ['sqlite', 'postgres'])
def test_each_dialect_has_a_script_for_every_migration_and_no_other(dialect: str) -> None:
    files = {entry.name for entry in resources.files('threadline.storage.migrations').joinpath(dialect).iterdir()}
    assert files == {f'{m.name}.sql' for m in MIGRATIONS}
    for migration in MIGRATIONS:
        text = script(migration, dialect)  # type: ignore[arg-type]
        assert text.startswith(f'-- {dialect}, {migration.name}:'), 'each script says what it is, even an empty one'


def test_names_are_unique_and_legacy_numbers_keep_their_order() -> None:
    assert len({m.name for m in MIGRATIONS}) == len(MIGRATIONS)
    for dialect in ('sqlite', 'postgres'):
        numbers = [m.legacy[dialect] for m in MIGRATIONS if dialect in m.legacy]  # type: ignore[index]
        assert numbers == list(range(1, len(numbers) + 1)), dialect


def test_a_script_with_a_trigger_and_semicolons_in_strings_and_comments_runs_whole() -> None:
    conn = sqlite3.connect(':memory:', isolation_level=None)
    _run_script(
        conn,
        """-- a comment; with a semicolon
        CREATE TABLE notes (body TEXT);
        CREATE TABLE counts (n INTEGER);
        INSERT INTO counts VALUES (0);
        CREATE TRIGGER counted AFTER INSERT ON notes BEGIN
            UPDATE counts SET n = n + 1;
            UPDATE counts SET n = n + 10;
        END;
        INSERT INTO notes VALUES ('one; two'); INSERT INTO notes VALUES ('three');
        -- trailing; comment
        """,
    )
    assert conn.execute('SELECT body FROM notes ORDER BY rowid').fetchall() == [('one; two',), ('three',)]
    assert conn.execute('SELECT n FROM counts').fetchone() == (22,)


def test_a_store_records_names_once_and_a_second_open_applies_nothing(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / 's.db').close()
    conn = sqlite3.connect(tmp_path / 's.db', isolation_level=None)
    conn.execute('BEGIN IMMEDIATE')
    applied_now = migrate(
        conn,
        'sqlite',
        has_table=_has_table,
        run_script=_run_script,
        steps={'index_grams_of_older_messages': print},
        placeholder='?',
    )
    conn.execute('COMMIT')
    assert applied_now == []
    rows = conn.execute('SELECT name FROM threadline_schema_migrations').fetchall()
    assert sorted(r[0] for r in rows) == sorted(m.name for m in MIGRATIONS)
    assert not _has_table(conn, 'threadline_migrations'), 'a new store keeps no numbered table'
    assert applied(conn, 'sqlite', has_table=_has_table) == [m.name for m in MIGRATIONS]


def test_a_store_made_with_numbers_reads_as_the_names_it_applied(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / 'old.db', isolation_level=None)
    conn.execute('CREATE TABLE threadline_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)')
    conn.executemany('INSERT INTO threadline_migrations VALUES (?, ?)', [(1, 'then'), (2, 'then'), (7, 'then')])
    assert applied(conn, 'sqlite', has_table=_has_table) == [
        'conversation_log_and_steps',
        'full_text_search',
        'notebooks',
    ]
    assert applied(conn, 'postgres', has_table=_has_table) == [
        'conversation_log_and_steps',
        'full_text_search',
        'scope_newest',
    ]
