"""The `threadline` command: the demo, chat, and the everyday tools of a conversation store.

Every command takes `--db PATH` (default under the user's data directory, or `THREADLINE_DB`;
a `postgresql://` URL uses PostgreSQL) and `--scope NAME` (default `local`, or
`THREADLINE_SCOPE`). Errors print one line saying what and what to do, and exit 1; `--debug`
shows the traceback instead.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

__all__ = ['main', 'run']

console = Console(highlight=False, soft_wrap=True)


def default_db() -> str:
    configured = os.environ.get('THREADLINE_DB')
    if configured:
        return configured
    import platformdirs

    return str(Path(platformdirs.user_data_dir('threadline')) / 'threadline.db')


def default_scope() -> str:
    return os.environ.get('THREADLINE_SCOPE', 'local')


class _State:
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


def _options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option('--db', 'db', default=None, help='Database path or postgresql:// URL [env THREADLINE_DB].')(fn)
    fn = click.option(
        '--scope', default=None, help='Scope (tenant/owner) of the conversations [env THREADLINE_SCOPE].'
    )(fn)
    return click.option('--debug', is_flag=True, help='Show tracebacks.')(fn)


def _state(db: str | None, scope: str | None, debug: bool) -> _State:
    ctx = click.get_current_context()
    parent = ctx.find_object(_State)
    return _State(
        db or (parent.db if parent and parent.db != default_db() else None),
        scope if scope is not None else (parent.scope if parent else None),
        debug or bool(parent and parent.debug),
    )


def _dump(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=True, default=str))


@click.group(context_settings={'help_option_names': ['-h', '--help']})
@_options
@click.pass_context
def cli(ctx: click.Context, db: str | None, scope: str | None, debug: bool) -> None:
    """Threadline: the conversation history of LLM agents."""
    ctx.obj = _State(db, scope, debug)


@cli.command()
@_options
def demo(db: str | None, scope: str | None, debug: bool) -> None:
    """Run the narrated, offline demo of the whole system (exit 0 only if every step held)."""
    from ._demo import DemoFailed, run_demo

    if db is None:
        import platformdirs

        path = Path(platformdirs.user_data_dir('threadline')) / 'demo.db'
        for old in path.parent.glob('demo.db*'):
            old.unlink()
        path.with_name('demo-payments.jsonl').unlink(missing_ok=True)
    else:
        path = Path(db)
    try:
        run_demo(path, console)
    except DemoFailed as exc:
        raise click.ClickException(f'demo step failed: {exc}') from None


@cli.command()
@click.option('-m', '--model', default='demo', help="'demo', 'test', or a provider model like openai:gpt-5.2.")
@click.option('-c', '--continue', 'cont', is_flag=True, help='Continue the latest conversation.')
@click.option('--cid', default=None, help='Continue this conversation.')
@_options
def chat(model: str, cont: bool, cid: str | None, db: str | None, scope: str | None, debug: bool) -> None:
    """An interactive conversation, saved to the store after every turn (/quit or Ctrl-D ends it)."""
    from .._uuid import uuid7
    from ..agent import Agent
    from ..models import infer_model

    state = _state(db, scope, debug)
    store = state.store
    if model == 'demo':  # the demo model comes with the demo's support tools
        from ._support import Payments, support_agent

        payments = (
            Path(state.db).with_name('chat-payments.jsonl') if '://' not in state.db else Path('chat-payments.jsonl')
        )
        agent = support_agent(store, state.scope, Payments(payments))
    else:
        resolved = infer_model(model)
        getattr(resolved, 'provider', None)  # a missing API key or extra fails now, not after the first message
        agent = Agent(resolved, system_prompt='You are a helpful assistant.')
    if cont and cid is None:
        latest = store.sync.list(state.scope, limit=1)
        cid = latest[0].conversation_id if latest else None
    cid = cid or uuid7()
    kwargs: dict[str, Any] = {'conversation_id': cid}
    if store.sync.conversation_state(cid, scope=state.scope) is not None:
        kwargs = store.sync.load(cid, scope=state.scope).run_kwargs()
    console.print(f'conversation {cid} (model {model}); /quit to leave')
    while True:
        try:
            line = input('you> ')
        except EOFError:
            break
        if line.strip() in ('/quit', '/exit'):
            break
        if not line.strip():
            continue
        result = agent.run_sync(line, **kwargs)
        store.sync.save(result, scope=state.scope)
        kwargs = store.sync.load(cid, scope=state.scope).run_kwargs()
        console.print(f'assistant> {result.output}')
    console.print(f'saved as {cid}')


@cli.group(invoke_without_command=True)
@click.pass_context
def conversations(ctx: click.Context) -> None:
    """Stored conversations (default: list)."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_conversations)


@conversations.command('list')
@click.option('-q', '--query', default=None, help='Only conversations whose title contains this.')
@click.option('-n', 'limit', default=20, show_default=True, help='How many.')
@click.option('--json', 'as_json', is_flag=True)
@_options
def list_conversations(
    query: str | None, limit: int, as_json: bool, db: str | None = None, scope: str | None = None, debug: bool = False
) -> None:
    """Conversations, most recent first."""
    from rich.table import Table

    state = _state(db, scope, debug)
    rows = state.store.sync.list(state.scope, limit=limit, query=query)
    if as_json:
        _dump([r.__dict__ for r in rows])
        return
    table = Table('title', 'messages', 'runs', 'updated')
    table.add_column('id', no_wrap=True)
    for r in rows:
        table.add_row(
            escape(r.title or ''),
            str(r.message_count),
            str(r.run_count),
            r.updated_at.strftime('%Y-%m-%d %H:%M'),
            r.conversation_id,
        )
    console.print(table)


@conversations.command()
@click.argument('conversation_id')
@click.option('--json', 'as_json', is_flag=True, help='The wire-format JSON.')
@_options
def show(conversation_id: str, as_json: bool, db: str | None, scope: str | None, debug: bool) -> None:
    """One conversation's messages."""
    from ..messages import ModelMessagesTypeAdapter

    state = _state(db, scope, debug)
    stored = state.store.sync.load(conversation_id, scope=state.scope)
    if as_json:
        click.echo(ModelMessagesTypeAdapter.dump_json(stored.messages, indent=2).decode())
        return
    console.print(
        f'{stored.conversation_id}  revision {stored.revision}  {stored.length} messages'
        + (f'  forked from {stored.forked_from} at {stored.shared_prefix}' if stored.forked_from else '')
    )
    for position, message in enumerate(stored.messages, start=stored.offset):
        for part in message.parts:
            console.print(f'  {position:>4} {message.kind:<8} {part.part_kind:<14} {escape(_summary(part))}')


def _summary(part: Any) -> str:
    if part.part_kind in ('tool-call', 'builtin-tool-call'):
        return f'{part.tool_name}({part.args_as_json_str()})'
    if part.part_kind in ('tool-return', 'builtin-tool-return'):
        return f'{part.tool_name} -> {str(part.content)[:100]} [{part.outcome}]'
    content = getattr(part, 'content', '')
    return (content if isinstance(content, str) else json.dumps(str(content)))[:120].replace('\n', ' ')


@conversations.command()
@click.argument('query')
@click.option('-n', 'limit', default=10, show_default=True)
@click.option('--json', 'as_json', is_flag=True)
@_options
def search(query: str, limit: int, as_json: bool, db: str | None, scope: str | None, debug: bool) -> None:
    """Full-text search over the stored history of the scope."""
    state = _state(db, scope, debug)
    hits = state.store.sync.search(query, scope=state.scope, limit=limit)
    if as_json:
        _dump([h.__dict__ for h in hits])
        return
    for hit in hits:
        console.print(f'{hit.conversation_id} #{hit.position}  {hit.score:.2f}  {escape(repr(hit.snippet))}')
    if not hits:
        console.print('no matches')


@conversations.command()
@click.argument('conversation_id')
@click.option('--at', type=int, default=None, help='Share only the first N messages.')
@_options
def fork(conversation_id: str, at: int | None, db: str | None, scope: str | None, debug: bool) -> None:
    """Fork a conversation (the shared prefix is not copied); prints the new id."""
    state = _state(db, scope, debug)
    click.echo(state.store.sync.fork(conversation_id, scope=state.scope, at=at))


@conversations.command()
@click.argument('conversation_id')
@_options
def delete(conversation_id: str, db: str | None, scope: str | None, debug: bool) -> None:
    """Erase a conversation and everything recorded about it."""
    state = _state(db, scope, debug)
    state.store.sync.delete(conversation_id, scope=state.scope)
    click.echo(f'deleted {conversation_id}')


@conversations.command()
@click.argument('conversation_id')
@_options
def export(conversation_id: str, db: str | None, scope: str | None, debug: bool) -> None:
    """The conversation's history as wire-format JSON (as stored)."""
    state = _state(db, scope, debug)
    click.echo(state.store.sync.raw_history(conversation_id, scope=state.scope).decode())


@conversations.command('import')
@click.argument('file', type=click.Path(dir_okay=False, path_type=Path))
@click.option('--cid', default=None, help='Conversation id (default: the one in the file, else a new one).')
@_options
def import_(file: Path, cid: str | None, db: str | None, scope: str | None, debug: bool) -> None:
    """Import a history file (validated; stored with provenance 'client'); prints its id."""
    from .._uuid import uuid7
    from ..messages import ModelMessagesTypeAdapter

    state = _state(db, scope, debug)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise click.ClickException(f'cannot read {file}: {exc.strerror}') from None
    messages = ModelMessagesTypeAdapter.validate_json(data)
    cid = cid or next((m.conversation_id for m in reversed(messages) if m.conversation_id), None) or uuid7()
    state.store.sync.append(cid, messages, scope=state.scope, provenance='client')
    click.echo(cid)


@conversations.command()
@click.option('--older-than', 'older_than', default=None, help='Age like 30d, 12h, 90m.')
@click.option('--keep-last', type=int, default=None, help='Keep the newest N per scope.')
@click.option('--all-scopes', is_flag=True, help='Prune every scope (an operator action).')
@_options
def prune(
    older_than: str | None, keep_last: int | None, all_scopes: bool, db: str | None, scope: str | None, debug: bool
) -> None:
    """Delete old conversations (retention)."""
    from ..storage import EVERY_SCOPE

    state = _state(db, scope, debug)
    cutoff = datetime.now(tz=UTC) - _age(older_than) if older_than else None
    deleted = state.store.sync.prune(
        older_than=cutoff, keep_last=keep_last, scope=EVERY_SCOPE if all_scopes else state.scope
    )
    click.echo(f'deleted {len(deleted)} conversation(s)')


def _age(text: str) -> timedelta:
    units = {'d': 'days', 'h': 'hours', 'm': 'minutes', 's': 'seconds', 'w': 'weeks'}
    try:
        return timedelta(**{units[text[-1]]: float(text[:-1])})
    except (KeyError, ValueError):
        raise click.ClickException(f'--older-than {text!r}: use a number and a unit, like 30d, 12h or 90m') from None


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
@_options
def audit(
    target: str, as_json: bool, prompt_file: Path | None, dynamic: bool, db: str | None, scope: str | None, debug: bool
) -> None:
    """Audit a stored conversation (by id) or a JSON history file before replaying it."""
    from ..audit import AuditContext, PromptContract, audit_history

    state = _state(db, scope, debug)
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
@_options
def db_path(db: str | None, scope: str | None, debug: bool) -> None:
    """Print the database path or URL."""
    click.echo(_state(db, scope, debug).db)


@db.command('status')
@_options
def db_status(db: str | None, scope: str | None, debug: bool) -> None:
    """Migrations, conversations and size."""
    state = _state(db, scope, debug)
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
@_options
def db_backup(destination: Path, db: str | None, scope: str | None, debug: bool) -> None:
    """Copy a SQLite database consistently (online backup) to DESTINATION."""
    import sqlite3

    state = _state(db, scope, debug)
    if state.db.startswith(('postgresql://', 'postgres://')):
        raise click.ClickException('backup works on SQLite databases; use pg_dump for PostgreSQL')
    if not Path(state.db).exists():
        raise click.ClickException(f'no database at {state.db}; run a command that writes to it first')
    with sqlite3.connect(state.db) as source, sqlite3.connect(destination) as target:
        source.backup(target)
    click.echo(f'backed up {state.db} to {destination}')


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


if __name__ == '__main__':  # pragma: no cover
    sys.exit(main())


def run() -> None:
    """Console-script wrapper: exit with `main()`'s code."""
    sys.exit(main())
