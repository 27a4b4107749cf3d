"""The command group, its shared options and state, and the entry point that turns errors into one line."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from threadline.exceptions import ConversationNotFound, ThreadlineError

if TYPE_CHECKING:  # the CLI loads what a command uses when it runs (see cli/README.md)
    from rich.progress import Progress

    from threadline.storage import AsyncStore, ChainCheck, FileBackend, SQLStore

    CliStore = AsyncStore[SQLStore] | AsyncStore[FileBackend]
    """The stores `--db` can name (see `open_store`): each has a seal and, for SQL, migrations."""

__all__ = [
    'read_input',
    'refuse_if_tampered',
    'one_line',
    'progress',
    'warn_if_tampered',
    'State',
    'cli',
    'console',
    'default_db',
    'default_scope',
    'dump',
    'group_state',
    'main',
    'wire_time',
    'shared_options',
    'state_for',
]

console = Console(highlight=False, soft_wrap=True)
notes = Console(highlight=False, soft_wrap=True, stderr=True)
"""Status notes: stderr, so stdout holds only answers and data."""


def progress() -> Progress:
    """A rich progress display at a terminal (transient: it leaves no trace); disabled when the
    output is piped, so scripts read only results."""
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

    columns = (TextColumn('{task.description}'), BarColumn(), TaskProgressColumn(), TimeRemainingColumn())
    return Progress(*columns, console=console, transient=True, disable=not console.is_terminal)


def default_db() -> str:
    import platformdirs

    configured = os.environ.get('THREADLINE_DB')
    if configured:
        return configured

    return str(Path(platformdirs.user_data_dir('threadline')) / 'threadline.db')


def default_scope() -> str:
    return os.environ.get('THREADLINE_SCOPE', 'local')


class State:
    last_scope: str | None = None
    """The scope of the command being run, named by error messages (not found in scope ...)."""

    def __init__(self, db: str | None, scope: str | None, debug: bool) -> None:
        self.db = db or default_db()
        self.scope = default_scope() if scope is None else scope
        if not self.scope.strip():
            raise click.UsageError('--scope (or THREADLINE_SCOPE) must not be empty: name the tenant or owner')
        State.last_scope = self.scope
        self.debug = debug
        self._store: CliStore | None = None
        self._read_only = False

    @property
    def store(self) -> CliStore:
        """The store, for commands that write (created, with its directories, if it is new)."""
        from threadline.storage import open_store

        if self._store is None:
            self._store = open_store(self.db)
        return self._store

    @property
    def existing(self) -> CliStore:
        """The store, for writes that need data already there (fork, delete): a missing database
        is an error rather than created empty."""
        reader = self.reader  # refuses a database that does not exist
        if self._read_only:
            reader.close()
            self._store, self._read_only = None, False
        return self.store

    @property
    def reader(self) -> CliStore:
        """The store, for commands that only read: a database that does not exist is an error, not
        created, and a SQLite file is opened read-only (so it can be read in a read-only place)."""
        from threadline.storage import FileStore, SQLiteStore, open_store

        if self._store is not None:
            return self._store

        if self.db.startswith(('postgresql://', 'postgres://')) or self.db == ':memory:':
            self._store = open_store(self.db)
        elif self.db.startswith('file:'):
            directory = Path(self.db.removeprefix('file:').removeprefix('//'))
            if not directory.is_dir():
                raise click.ClickException(f'no store at {self.db}; nothing to read (pass --db, or write to it first)')
            self._store = FileStore(directory)
        else:
            if not Path(self.db).is_file():
                raise click.ClickException(
                    f'no database at {self.db}; nothing to read (pass --db, or write to it first)'
                )
            self._store, self._read_only = SQLiteStore(self.db, read_only=True), True
        return self._store


def warn_if_tampered(store: CliStore, conversation_id: str, scope: str) -> None:
    """Say so on stderr when the stored conversation fails its hash chain or its keyed seal."""
    check = store.sync.verify(conversation_id, scope=scope)
    if not check.ok:
        click.echo(f'warning: conversation {conversation_id!r} {_failure(check)}', err=True)


def refuse_if_tampered(store: CliStore, conversation_id: str, scope: str, *, force: bool, doing: str) -> None:
    """Refuse to pass on a conversation that fails its hash chain or seal, unless --force."""
    check = store.sync.verify(conversation_id, scope=scope)
    if check.ok:
        return
    if not force:
        raise click.ClickException(
            f'conversation {conversation_id!r} {_failure(check)}. Audit it first; pass --force to {doing} it anyway'
        )
    warn_if_tampered(store, conversation_id, scope)


def _failure(check: ChainCheck) -> str:
    if check.code == 'unknown_key':
        return (
            f'cannot be checked here ({check.reason}); set THREADLINE_HOME or THREADLINE_STORE_KEYS to the key '
            'that wrote it'
        )
    if check.first_bad_position is not None:
        return f'fails its hash chain at message {check.first_bad_position} ({check.reason}); it was changed outside Threadline'
    return f'fails its integrity check ({check.reason}); it was changed outside Threadline'


def shared_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option(
        '-d', '--db', '--database', 'db', default=None, help='Database path or postgresql:// URL [env THREADLINE_DB].'
    )(fn)
    fn = click.option(
        '--scope', default=None, help='Scope (tenant/owner) of the conversations [env THREADLINE_SCOPE].'
    )(fn)
    return click.option('--debug', is_flag=True, help='Show tracebacks.')(fn)


MAX_INPUT_MB = 512
"""The largest file a command reads whole (`THREADLINE_MAX_INPUT_MB` to change it)."""


def read_input(path: Path) -> bytes:
    """`path`'s bytes, read at most the input limit far: `/dev/zero` or a runaway file is an error
    naming the limit, not a process that eats the machine's memory."""
    limit = int(os.environ.get('THREADLINE_MAX_INPUT_MB') or MAX_INPUT_MB) * 1_000_000
    try:
        with path.open('rb') as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise click.ClickException(f'cannot read {path}: {exc.strerror}') from None
    if len(data) > limit:
        raise click.ClickException(
            f'{path} is over {limit // 1_000_000} MB; set THREADLINE_MAX_INPUT_MB to read a larger file'
        )
    return data


def state_for(db: str | None, scope: str | None, debug: bool) -> State:
    ctx = click.get_current_context()
    parent = ctx.find_object(State)
    return State(
        db or (parent.db if parent and parent.db != default_db() else None),
        scope if scope is not None else (parent.scope if parent else None),
        debug or bool(parent and parent.debug),
    )


def dump(value: object) -> None:
    """`value` as JSON on stdout; times in the wire format's UTC form (`2026-12-01T02:36:00.000001Z`)."""
    click.echo(json.dumps(value, indent=2, sort_keys=True, default=_json_default))


def wire_time(value: datetime) -> str:
    """A datetime as the message JSON writes it: UTC, ISO 8601, `Z`."""

    return str(value.astimezone(UTC).isoformat().replace('+00:00', 'Z'))


def _json_default(value: Any) -> Any:

    return wire_time(value) if isinstance(value, datetime) else str(value)


def _version() -> str:

    try:
        return version('threadline')
    except PackageNotFoundError:  # pragma: no cover - run from a source tree without metadata
        return 'unknown'


@click.group(context_settings={'help_option_names': ['-h', '--help']}, invoke_without_command=True)
@click.version_option(_version(), '-V', '--version', prog_name='threadline', message='%(prog)s %(version)s')
@shared_options
@click.pass_context
def cli(ctx: click.Context, db: str | None, scope: str | None, debug: bool) -> None:
    """Threadline: the conversation history of LLM agents."""
    ctx.obj = State(db, scope, debug)
    if ctx.invoked_subcommand is None:  # no command: the help, and a clean exit
        click.echo(ctx.get_help())


def group_state(ctx: click.Context, db: str | None, scope: str | None, debug: bool) -> None:
    """For a command group's own --db/--scope (`threadline conversations --db X list`): what it
    names overrides the top level's for every command under it."""
    ctx.obj = state_for(db, scope, debug)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `threadline` console script: errors become one line and exit code 1."""

    args = sys.argv[1:] if argv is None else argv
    debug = '--debug' in args
    try:
        code = cli.main(args=args, prog_name='threadline', standalone_mode=False)
    except click.exceptions.Abort:
        click.echo('aborted', err=True)
        return 1
    except click.ClickException as exc:
        if debug:
            raise
        if isinstance(exc, click.UsageError) and exc.ctx is not None:  # how to call it, as click says
            help_option = max(exc.ctx.help_option_names, key=len, default='--help')
            click.echo(f"{exc.ctx.get_usage()}\nTry '{exc.ctx.command_path} {help_option}' for help.\n", err=True)
        click.echo(f'error: {exc.format_message()}', err=True)
        return exc.exit_code
    except (ThreadlineError, OSError, ValueError) as exc:
        if debug:
            raise
        message = one_line(exc)
        if isinstance(exc, ConversationNotFound) and State.last_scope is not None:
            message = message.replace('in this scope', f'in scope {State.last_scope!r}')
        click.echo(f'error: {message}', err=True)
        return 1
    return code if isinstance(code, int) else 0


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
