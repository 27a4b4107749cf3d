"""The command group, its shared options and state, and the entry point that turns errors into one line."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console

__all__ = ['State', 'cli', 'console', 'default_db', 'default_scope', 'dump', 'main', 'shared_options', 'state_for']

console = Console(highlight=False, soft_wrap=True)


def default_db() -> str:
    configured = os.environ.get('THREADLINE_DB')
    if configured:
        return configured
    import platformdirs

    return str(Path(platformdirs.user_data_dir('threadline')) / 'threadline.db')


def default_scope() -> str:
    return os.environ.get('THREADLINE_SCOPE', 'local')


class State:
    def __init__(self, db: str | None, scope: str | None, debug: bool) -> None:
        self.db = db or default_db()
        self.scope = default_scope() if scope is None else scope
        if not self.scope.strip():
            raise click.UsageError('--scope (or THREADLINE_SCOPE) must not be empty: name the tenant or owner')
        self.debug = debug
        self._store: Any = None

    @property
    def store(self) -> Any:
        if self._store is None:
            from ..storage import open_store

            self._store = open_store(self.db)
        return self._store


def shared_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option('--db', 'db', default=None, help='Database path or postgresql:// URL [env THREADLINE_DB].')(fn)
    fn = click.option(
        '--scope', default=None, help='Scope (tenant/owner) of the conversations [env THREADLINE_SCOPE].'
    )(fn)
    return click.option('--debug', is_flag=True, help='Show tracebacks.')(fn)


def state_for(db: str | None, scope: str | None, debug: bool) -> State:
    ctx = click.get_current_context()
    parent = ctx.find_object(State)
    return State(
        db or (parent.db if parent and parent.db != default_db() else None),
        scope if scope is not None else (parent.scope if parent else None),
        debug or bool(parent and parent.debug),
    )


def dump(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=True, default=str))


@click.group(context_settings={'help_option_names': ['-h', '--help']})
@shared_options
@click.pass_context
def cli(ctx: click.Context, db: str | None, scope: str | None, debug: bool) -> None:
    """Threadline: the conversation history of LLM agents."""
    ctx.obj = State(db, scope, debug)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `threadline` console script: errors become one line and exit code 1."""
    from ..exceptions import ThreadlineError

    args = sys.argv[1:] if argv is None else argv
    debug = '--debug' in args
    try:
        cli.main(args=args, prog_name='threadline', standalone_mode=False)
    except click.exceptions.Abort:
        click.echo('aborted', err=True)
        return 1
    except click.ClickException as exc:
        if debug:
            raise
        click.echo(f'error: {exc.format_message()}', err=True)
        return exc.exit_code if exc.exit_code != 2 else 2
    except (ThreadlineError, OSError, ValueError) as exc:
        if debug:
            raise
        click.echo(f'error: {_one_line(exc)}', err=True)
        return 1
    return 0


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
