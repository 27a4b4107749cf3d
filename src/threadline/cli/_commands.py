"""`threadline audit` and `threadline db ...`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ._app import cli, console, shared_options, state_for

__all__ = ['audit', 'db']


@cli.command()
@click.argument('target')
@click.option('--json', 'as_json', is_flag=True, help='The report as JSON.')
@click.option(
    '--prompt-file',
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help='The system prompt the agent requires (checked by keyed hash).',
)
@click.option('--dynamic', is_flag=True, help='The agent uses instructions, not a stored system prompt.')
@shared_options
def audit(
    target: str, as_json: bool, prompt_file: Path | None, dynamic: bool, db: str | None, scope: str | None, debug: bool
) -> None:
    """Audit a stored conversation (by id) or a JSON history file before replaying it."""
    from ..audit import AuditContext, PromptContract, audit_history

    state = state_for(db, scope, debug)
    path = Path(target)
    store = state.store
    if dynamic:
        contract = PromptContract.dynamic('dynamic')
    elif prompt_file is not None:
        contract = PromptContract.for_text(prompt_file.read_text(), name=prompt_file.name, store=store)
    else:
        from ._support import SUPPORT_PROMPT

        contract = PromptContract.for_text(SUPPORT_PROMPT, name='support-v3 (demo default)', store=store)
    if path.exists() and not store.sync.conversation_state(target, scope=state.scope):
        history: Any = path.read_bytes()
        context = AuditContext(source='client', prompt_contract=contract, store=store, scope=state.scope)
    else:
        history = store.sync.load(target, scope=state.scope)
        context = AuditContext(
            source='store', store=store, scope=state.scope, conversation_id=target, prompt_contract=contract
        )
    report = audit_history(history, context)
    if as_json:
        click.echo(report.to_json())
        return
    from rich.table import Table

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
    for line in report.advice:
        console.print(f'  {line}')


@cli.group()
def db() -> None:
    """The database: where it is, what is in it, a backup."""


@db.command('path')
@shared_options
def db_path(db: str | None, scope: str | None, debug: bool) -> None:
    """Print the database path or URL."""
    click.echo(state_for(db, scope, debug).db)


@db.command('status')
@shared_options
def db_status(db: str | None, scope: str | None, debug: bool) -> None:
    """Migrations, conversations and size."""
    state = state_for(db, scope, debug)
    store = state.store
    rows = store.sync.list(state.scope, limit=1_000_000)
    size = Path(state.db).stat().st_size if Path(state.db).exists() else None
    migrations = store.migrations() if hasattr(store, 'migrations') else []
    click.echo(
        f'database: {state.db}\nmigrations: {migrations}\nscope {state.scope!r}: {len(rows)} conversations, '
        f'{sum(r.message_count for r in rows)} messages' + (f'\nsize: {size / 1e6:.2f} MB' if size else '')
    )


@db.command('backup')
@click.argument('destination', type=click.Path(dir_okay=False, path_type=Path))
@shared_options
def db_backup(destination: Path, db: str | None, scope: str | None, debug: bool) -> None:
    """Copy a SQLite database consistently (online backup) to DESTINATION."""
    import sqlite3

    state = state_for(db, scope, debug)
    if state.db.startswith(('postgresql://', 'postgres://')):
        raise click.ClickException('backup works on SQLite databases; use pg_dump for PostgreSQL')
    if not Path(state.db).exists():
        raise click.ClickException(f'no database at {state.db}; run a command that writes to it first')
    with sqlite3.connect(state.db) as source, sqlite3.connect(destination) as target:
        source.backup(target)
    click.echo(f'backed up {state.db} to {destination}')
