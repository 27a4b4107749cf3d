"""`threadline audit` and `threadline db ...`."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from threadline.cli._app import cli, console, dump, group_state, progress, read_input, shared_options, state_for

__all__ = ['audit', 'db']


# Exit codes of `threadline audit`, one per verdict class (0 only for READY), so a script can gate on it.
EXIT_CODES = {
    'READY': 0,
    'WAITING': 10,
    'MISSING_OUTCOME_RECEIPT': 11,
    'BLOCKED': 12,
    'ORPHAN_RESULT_REMOVED': 13,
    'INTERRUPTED_TOOL': 14,
    'SYSTEM_PROMPT_GAP': 15,
    'SCOPE_DRIFT': 16,
    'UNTRUSTED_HISTORY': 17,
    'SERIALIZATION_FAILURE': 18,
}
_EXIT_HELP = ', '.join(f'{code} {verdict}' for verdict, code in EXIT_CODES.items())


@cli.command(
    short_help='Audit a conversation or a history file.',
    epilog=f'Exit codes: {_EXIT_HELP}; 1 an error, 2 a usage error.',
)
@click.argument('target')
@click.option('--json', 'as_json', is_flag=True, help='The report as JSON.')
@click.option(
    '--prompt-file',
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help='The system prompt the agent requires (checked by keyed hash; a trailing newline is ignored). '
    'Without it (or --dynamic) the prompt is not checked.',
)
@click.option('--dynamic', is_flag=True, help='The agent uses instructions, not a stored system prompt.')
@click.option(
    '--expect-outcome',
    is_flag=True,
    help='The last run was meant to change something: ask for its outcome receipt (else an answer owes none).',
)
@click.option(
    '--effect-tool',
    'effect_tools',
    multiple=True,
    metavar='NAME',
    help='A tool with external effects: a run that called it owes an outcome receipt (repeatable).',
)
@shared_options
@click.pass_context
def audit(
    ctx: click.Context,
    target: str,
    as_json: bool,
    prompt_file: Path | None,
    dynamic: bool,
    expect_outcome: bool,
    effect_tools: tuple[str, ...],
    db: str | None,
    scope: str | None,
    debug: bool,
) -> None:
    """Audit a stored conversation (by id) or a JSON history file before replaying it.

    The outcome gate asks for a receipt only where an effect was expected: --expect-outcome, an
    --effect-tool the run called, or a receipt already recorded for the run."""
    from rich.table import Table

    from threadline.audit import AuditContext, PromptContract, audit_history
    from threadline.cli._fix import fix_lines

    state = state_for(db, scope, debug)
    path = Path(target)
    try:
        store = state.existing  # a database that does not exist is an error, not created empty
    except click.ClickException:
        if not path.exists():
            raise
        from threadline.storage import open_store

        store = open_store(':memory:')  # a history file audited on its own: no database is made for it
    if dynamic:
        contract = PromptContract.dynamic('dynamic')
    elif prompt_file is not None:
        text = prompt_file.read_text().rstrip('\r\n')  # editors end files with a newline; prompts rarely do
        contract = PromptContract.for_text(text, name=prompt_file.name, store=store)
    else:
        contract = PromptContract.unchecked()
    stored = store.sync.conversation_state(target, scope=state.scope) is not None
    if path.exists() and not stored:
        history: Any = read_input(path)
        context = AuditContext(
            source='client',
            prompt_contract=contract,
            store=store,
            scope=state.scope,
            expect_outcome=expect_outcome,
            effect_tools=effect_tools,
        )
    elif not stored:
        looks_like_file = path.suffix.lower() == '.json' or '/' in target or '\\' in target
        raise click.ClickException(
            f'no such file: {target}'
            if looks_like_file
            else f'no conversation {target!r} in scope {state.scope!r}, and no file of that name'
        )
    else:
        history = store.sync.load(target, scope=state.scope)
        context = AuditContext(
            source='store',
            store=store,
            scope=state.scope,
            conversation_id=target,
            prompt_contract=contract,
            expect_outcome=expect_outcome,
            effect_tools=effect_tools,
        )
    report = audit_history(history, context)
    if as_json:
        click.echo(report.to_json())
        ctx.exit(EXIT_CODES.get(report.verdict, 1))

    table = Table('gate', 'result', 'evidence')
    for gate in report.gates:
        mark = (
            '[green]pass[/]'
            if gate.passed
            else ('[red]' + ', '.join(gate.verdicts) + '[/]' if gate.verdicts else 'skipped')
        )
        table.add_row(gate.gate, mark, json.dumps(gate.evidence, default=str)[:100])
    console.print(table)
    console.print(f'verdict: [bold]{report.verdict}[/]')
    if report.gate('outcome').evidence.get('expected') == 'none':
        console.print('  outcome: no outcome expected (--expect-outcome asks for a receipt of the last run)')
    for line in report.advice:
        console.print(f'  {line}')

    for line in fix_lines(report, target, store, state.scope, stored):
        console.print(f'  fix: {escape(line)}')
    ctx.exit(EXIT_CODES.get(report.verdict, 1))


@cli.group(short_help='The database: where, what, backup, restore.')
@shared_options
@click.pass_context
def db(ctx: click.Context, db: str | None, scope: str | None, debug: bool) -> None:
    """The database: where it is, what is in it, a backup."""
    group_state(ctx, db, scope, debug)


@db.command('path')
@shared_options
def db_path(db: str | None, scope: str | None, debug: bool) -> None:
    """Print the database path or URL."""
    click.echo(state_for(db, scope, debug).db)


@db.command('status', short_help='Migrations, conversations, size and sealing key.')
@click.option(
    '--json',
    'as_json',
    is_flag=True,
    help='As JSON: {database, migrations, scope, conversations, messages, size_bytes, store_key, key_source}.',
)
@shared_options
def db_status(as_json: bool, db: str | None, scope: str | None, debug: bool) -> None:
    """Migrations, conversations, size, and the key that seals the store (where it is kept)."""
    state = state_for(db, scope, debug)
    store = state.reader
    rows = store.sync.list(state.scope, limit=1_000_000)
    size = Path(state.db).stat().st_size if Path(state.db).exists() else None
    migrations = store.migrations() if hasattr(store, 'migrations') else []
    seal = store.sync.seal
    unknown = getattr(store.sync, 'unknown_seal_keys', None)  # SQL stores (a FileStore would read every file)
    foreign = unknown() if callable(unknown) else None
    if as_json:
        dump(
            {
                'database': state.db,
                'migrations': migrations,
                'scope': state.scope,
                'conversations': len(rows),
                'messages': sum(r.message_count for r in rows),
                'size_bytes': size,
                'store_key': seal.key_id,
                'key_source': str(seal.source),
                'unknown_seal_keys': foreign,
            }
        )
        return
    key = f'{seal.key_id} ({seal.source})' if seal.key_id else f'none configured here ({seal.source})'
    click.echo(
        f'database: {state.db}\nmigrations: {len(migrations)} applied'
        + (f' (latest: {migrations[-1]})' if migrations else '')
        + f'\nscope {state.scope!r}: {_count(len(rows), "conversation")}, '
        f'{_count(sum(r.message_count for r in rows), "message")}' + (f'\nsize: {size / 1e6:.2f} MB' if size else '')
    )
    click.echo(f'store key: {key}')
    if foreign:
        click.echo(f'seals by keys not held here: {", ".join(foreign)} (audits of what they seal will fail)')


@db.command('verify', short_help="Check every conversation's chain and seal.")
@click.option('--json', 'as_json', is_flag=True, help='As JSON: [{conversation_id, ok, code, reason, checked}].')
@shared_options
@click.pass_context
def db_verify(ctx: click.Context, as_json: bool, db: str | None, scope: str | None, debug: bool) -> None:
    """Check every conversation of the scope: its hash chain and its keyed seal (exit 1 if any
    fails). A progress bar shows the way through a large store at a terminal."""
    state = state_for(db, scope, debug)
    store = state.reader.sync
    rows = store.list(state.scope, limit=10**9)
    results = []
    with progress() as bar:
        task = bar.add_task('verifying', total=len(rows))
        for row in rows:
            check = store.verify(row.conversation_id, scope=state.scope)
            results.append((row.conversation_id, check))
            bar.advance(task)
    failed = [(cid, check) for cid, check in results if not check.ok]
    if as_json:
        dump(
            [
                {'conversation_id': cid, 'ok': c.ok, 'code': c.code, 'reason': c.reason, 'checked': c.checked}
                for cid, c in results
            ]
        )
    else:
        for cid, check in failed:
            console.print(f'[red]{cid}[/]: {check.code} ({check.reason})')
        click.echo(f'{len(results) - len(failed)} of {len(results)} conversation(s) in scope {state.scope!r} verify')
    ctx.exit(1 if failed else 0)


@db.command('backup', short_help='Copy a SQLite database consistently.')
@click.argument('destination', type=click.Path(dir_okay=False, path_type=Path))
@shared_options
def db_backup(destination: Path, db: str | None, scope: str | None, debug: bool) -> None:
    """Copy a SQLite database consistently to DESTINATION, which must not exist yet.

    The copy is checked and written beside DESTINATION under a temporary name, then moved into
    place only if DESTINATION still does not exist: an existing file is never overwritten, and a
    failure leaves nothing behind.
    """
    import sqlite3

    state = state_for(db, scope, debug)
    if state.db.startswith(('postgresql://', 'postgres://')):
        raise click.ClickException('backup works on SQLite databases; use pg_dump for PostgreSQL')
    source = Path(state.db)
    if not source.is_file():
        raise click.ClickException(f'no database at {state.db}; nothing to back up')
    if destination.exists():
        raise click.ClickException(f'{destination} exists; choose a new file (a backup never overwrites)')
    if not destination.parent.is_dir():
        raise click.ClickException(f'{destination.parent} is not a directory')
    partial = destination.with_name(f'.{destination.name}.partial-{os.getpid()}')
    try:
        with contextlib.closing(
            sqlite3.connect(f'file:{source.resolve()}?mode=ro', uri=True, check_same_thread=False)
        ) as conn:
            check = conn.execute('PRAGMA quick_check').fetchone()[0]
            if check != 'ok':
                raise click.ClickException(
                    f'{state.db} is damaged ({check}); restore it from an earlier backup (threadline db restore)'
                )
            _vacuum_into(conn, partial, source.name)
        os.link(partial, destination)  # fails if DESTINATION appeared meanwhile: never overwrite
    except sqlite3.DatabaseError as exc:
        raise click.ClickException(f'cannot back up {state.db}: {exc}') from None
    except FileExistsError:
        raise click.ClickException(f'{destination} exists; choose a new file (a backup never overwrites)') from None
    finally:
        partial.unlink(missing_ok=True)
    click.echo(f'backed up {state.db} to {destination}')


@db.command('restore', short_help='Restore a SQLite database from a backup.')
@click.argument('backup', type=click.Path(dir_okay=False, path_type=Path))
@click.option('--yes', is_flag=True, help='Do not ask before replacing the database.')
@shared_options
def db_restore(backup: Path, yes: bool, db: str | None, scope: str | None, debug: bool) -> None:
    """Restore a SQLite database from BACKUP (made by `db backup`), and record that you did.

    The backup must be a sound Threadline database of the same store (the same store id). Its
    pages are copied over the database in one transaction (readers see the old or the new), then
    the restore is recorded in the tip book beside the store key: conversations are no longer
    reported as truncated because the backup is older than what the book saw. Copying a backup
    over the file by hand records nothing, so that rollback is still reported, as an attacker's is.
    """
    import sqlite3

    from threadline.storage import SQLiteStore

    state = state_for(db, scope, debug)
    if state.db.startswith(('postgresql://', 'postgres://')):
        raise click.ClickException('restore works on SQLite databases; use pg_restore for PostgreSQL')
    target = Path(state.db)
    source_id = _store_id(backup)
    if target.is_file() and _store_id(target) not in (source_id, None):
        raise click.ClickException(f'{backup} is a backup of another store, not of {state.db}; nothing was restored')
    if target.is_file() and not yes and not click.confirm(f'replace {state.db} with {backup}?', default=False):
        raise click.ClickException('nothing was restored')
    try:
        with (
            contextlib.closing(sqlite3.connect(f'file:{backup.resolve()}?mode=ro', uri=True)) as src,
            contextlib.closing(sqlite3.connect(target, timeout=30)) as dst,
        ):
            src.backup(dst)
    except sqlite3.Error as exc:
        raise click.ClickException(f'cannot restore {state.db} from {backup}: {exc}; nothing was restored') from None
    store = SQLiteStore(target)
    try:
        forgotten = store.sync.record_restore(str(backup.resolve()))
    finally:
        store.close()
    click.echo(f'restored {state.db} from {backup}; recorded in the tip book ({forgotten} newer tips forgotten)')


def _store_id(path: Path) -> str | None:
    """The store id of the SQLite database at `path` (None: made before ids), or a clear error."""
    import sqlite3

    if not path.is_file():
        raise click.ClickException(f'no database at {path}')
    try:
        with contextlib.closing(sqlite3.connect(f'file:{path.resolve()}?mode=ro', uri=True)) as conn:
            if conn.execute('PRAGMA quick_check').fetchone()[0] != 'ok':
                raise click.ClickException(f'{path} is damaged; choose another backup')
            row = conn.execute("SELECT value FROM threadline_meta WHERE key = 'store_id'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise click.ClickException(f'{path} is not a Threadline database ({exc})') from None
    return None if row is None else str(row[0])


def _vacuum_into(conn: Any, partial: Path, name: str) -> None:
    """`VACUUM INTO partial` (one read transaction: a consistent copy even while others write),
    with a bar at a terminal that follows the copy's size towards the pages in use."""

    page_size, pages, free = (
        conn.execute(f'PRAGMA {p}').fetchone()[0] for p in ('page_size', 'page_count', 'freelist_count')
    )
    total = max(1, (pages - free) * page_size)
    failure: list[BaseException] = []

    def copy() -> None:
        try:
            conn.execute('VACUUM INTO ?', (str(partial),))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=copy, name='threadline-backup')
    with progress() as bar:
        task = bar.add_task(f'backing up {name}', total=total)
        worker.start()
        while worker.is_alive():
            worker.join(0.1)
            size = partial.stat().st_size if partial.exists() else 0
            bar.update(task, completed=min(size, total))
    if failure:
        raise failure[0]


def _count(n: int, noun: str) -> str:
    return f'{n:,} {noun}' + ('' if n == 1 else 's')
