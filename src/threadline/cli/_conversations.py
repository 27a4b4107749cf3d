"""`threadline conversations ...`: list, show, search, fork, delete, export, import (prune: `_prune`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from threadline._uuid import uuid7
from threadline.cli._app import (
    State,
    cli,
    console,
    dump,
    group_state,
    progress,
    read_input,
    refuse_if_tampered,
    shared_options,
    state_for,
    warn_if_tampered,
)
from threadline.exceptions import MessageValidationError

if TYPE_CHECKING:  # the CLI loads what a command uses when it runs (see cli/README.md)
    from threadline.messages import RunUsage
    from threadline.storage import SyncStore

__all__ = ['conversations', 'row', 'wire_time']


_LIST_OPTIONS = (
    click.option('-q', '--query', default=None, help='Only conversations whose title contains this.'),
    click.option('-n', '--count', 'count', default=20, show_default=True, help='How many, newest first (0: all).'),
    click.option('-s', '--short', is_flag=True, help='Only the id and title of each.'),
    click.option('-t', '--truncate', is_flag=True, help='Cut each line to the width even when piped.'),
    click.option('-u', '--usage', 'with_usage', is_flag=True, help='Add the tokens each conversation used.'),
    click.option('-m', '--model', default=None, help='Only conversations with a run of this model (e.g. gpt-5.2).'),
    click.option('-l', '--latest', is_flag=True, help='Only the most recent conversation (-n 1).'),
    click.option(
        '--json',
        'as_json',
        is_flag=True,
        help='As JSON: a list of {conversation_id, title, message_count, run_count, created_at, updated_at, '
        'revision, forked_from, scope}; times are UTC ISO 8601 ending in Z.',
    ),
)


def _list_options(fn: Any) -> Any:
    """The options of `conversations list`, which the group takes too (`conversations -n 2`)."""
    for option in reversed(_LIST_OPTIONS):
        fn = option(fn)
    return fn


@cli.group(short_help='Stored conversations: list, show, search, more.', invoke_without_command=True)
@_list_options
@shared_options
@click.pass_context
def conversations(ctx: click.Context, /, db: str | None, scope: str | None, debug: bool, **listing: Any) -> None:
    """Stored conversations (default: list; the list's options work here too)."""
    group_state(ctx, db, scope, debug)
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_conversations, **listing)


@conversations.command('list')
@_list_options
@shared_options
def list_conversations(
    query: str | None,
    count: int,
    short: bool,
    truncate: bool,
    with_usage: bool,
    model: str | None,
    latest: bool,
    as_json: bool,
    db: str | None = None,
    scope: str | None = None,
    debug: bool = False,
) -> None:
    """Conversations, most recent first, one line each."""
    if count < 0:
        raise click.BadParameter(f'must be 0 (all) or more, not {count}', param_hint="'-n' / '--count'")
    count = 1 if latest else count
    state = state_for(db, scope, debug)
    store = state.reader.sync
    if model is None:  # read the page (and one more, to know whether it was cut), not every summary
        every = store.list(state.scope, limit=count + 1 if count else 10**9, query=query)
    else:
        every = store.list(state.scope, limit=10**9, query=query)
        every = [r for r in every if _used_model(store, r.conversation_id, state.scope, model)]
    rows = every[:count] if count else every
    usage = (
        {r.conversation_id: store.load(r.conversation_id, scope=state.scope, last=1).usage for r in rows}
        if with_usage
        else {}
    )
    if as_json:
        dump([{**r.__dict__, **({'usage': _tokens(usage[r.conversation_id])} if with_usage else {})} for r in rows])
        return
    if not rows and query is None and model is None:
        _other_scopes(store, state.scope)
    cut = console.is_terminal or truncate
    for r in rows:  # at a terminal (or with -t) each fits its line; piped, titles are whole
        line = row(r, short, _tokens(usage[r.conversation_id]) if with_usage else None)
        if cut:
            console.print(line, overflow='ellipsis', no_wrap=True, crop=True, soft_wrap=False)
        else:
            console.print(line)
    if count and len(every) > count:
        total = len(every) if model is not None else len(store.list(state.scope, limit=10**9, query=query))
        click.echo(f'{count} of {total} (use -n 0 for all)', err=True)


def _used_model(store: SyncStore, conversation_id: str, scope: str, model: str) -> bool:
    """Whether a run of the conversation used `model` (its name contains it: `gpt-5.2` matches
    `gpt-5.2-2026-01-01`)."""
    return any(model in (run.model_name or '') for run in store.list_runs(conversation_id, scope=scope))


def _tokens(usage: RunUsage) -> dict[str, int]:
    return {'input_tokens': usage.input_tokens, 'output_tokens': usage.output_tokens}


def _other_scopes(store: SyncStore, scope: str) -> None:
    """When this scope holds nothing, say which scopes do (the usual cause is a wrong --scope)."""
    from threadline.storage import EVERY_SCOPE

    others = {name: n for name, n in store.scope_counts(EVERY_SCOPE).items() if name != scope and n}
    hints = ', '.join(f'--scope {name} holds {n} conversation{"s" if n != 1 else ""}' for name, n in others.items())
    click.echo(f'scope {scope!r} holds no conversations' + (f'; {hints}' if hints else ''), err=True)


def row(summary: Any, short: bool, tokens: dict[str, int] | None = None) -> str:
    """One conversation on one line: id, time, counts (and tokens), then the title."""
    title = escape(' '.join((summary.title or '(untitled)').split()))
    if short:
        return f'[bold]{summary.conversation_id}[/]  {title}'
    when = summary.updated_at.astimezone().strftime('%Y-%m-%d %H:%M')
    used = f'  {tokens["input_tokens"]:>7} in {tokens["output_tokens"]:>6} out' if tokens is not None else ''
    return f'[bold]{summary.conversation_id}[/]  [dim]{when}[/]  {summary.message_count:>4} msgs{used}  {title}'


@conversations.command(short_help="Show a conversation's messages.")
@click.argument('conversation_id')
@click.option('--json', 'as_json', is_flag=True, help='The wire-format JSON.')
@click.option('-r', '--response', 'last_response', is_flag=True, help="Only the last response's text.")
@click.option('-x', '--extract', is_flag=True, help='Only the first fenced code block of the last response.')
@click.option('--short', is_flag=True, help='One line per part, cut to the screen.')
@shared_options
def show(
    conversation_id: str,
    as_json: bool,
    last_response: bool,
    extract: bool,
    short: bool,
    db: str | None,
    scope: str | None,
    debug: bool,
) -> None:
    """One conversation's messages, each part whole (--short: a line each), through a pager at a
    terminal when longer than the screen."""
    from threadline.cli._show import first_code_block, last_response_text, print_conversation
    from threadline.messages import ModelMessagesTypeAdapter

    state = state_for(db, scope, debug)
    stored = state.reader.sync.load(conversation_id, scope=state.scope)
    warn_if_tampered(state.reader, conversation_id, state.scope)
    if as_json:
        click.echo(ModelMessagesTypeAdapter.dump_json(stored.messages, indent=2).decode())
        return
    if last_response or extract:
        text = last_response_text(stored.messages)
        click.echo(first_code_block(text) if extract else text)
        return
    print_conversation(console, stored, short=short)


@conversations.command(short_help='Full-text search, best match first.')
@click.argument('query')
@click.option('-n', 'limit', default=10, show_default=True, help='How many hits, best first.')
@click.option('--json', 'as_json', is_flag=True, help='The hits as JSON.')
@shared_options
def search(query: str, limit: int, as_json: bool, db: str | None, scope: str | None, debug: bool) -> None:
    """Full-text search over the stored history of the scope, best match first.

    \b
    Query syntax (the same as the model's search tool):
      refund order     messages holding every word (case and accents ignored)
      "order 42"       the words next to each other, in that order
      refun*           words starting with refun (two characters or more)
    Anything else (AND, OR, NOT, -, :, parentheses) is read as words,
    never as operators.
    """
    state = state_for(db, scope, debug)
    found = state.reader.sync.search(query, scope=state.scope, limit=limit)
    hits = list({(h.conversation_id, h.position): h for h in found}.values())  # one line per message
    if as_json:
        dump([{**h.__dict__, 'timestamp': wire_time(h.timestamp)} for h in hits])
        return
    for hit in hits:
        when = wire_time(hit.timestamp) or '-'
        console.print(
            f'[bold]{hit.conversation_id}[/] #{hit.position}  {hit.role or "?"}  [dim]{when}[/]  {_marked(hit.snippet, hit.matches)}'
        )
    if not hits:
        console.print('no matches')


def _marked(snippet: str, matches: tuple[tuple[int, int], ...]) -> str:
    """The snippet as console markup: its matches (where `matches` says, without their brackets)
    highlighted, the rest, brackets the text holds included, shown literally."""

    def plain(text: str) -> str:
        return escape(re.sub(r'\s+', ' ', text))  # one line per hit

    out, at = [], 0
    for start, end in matches:
        out += [plain(snippet[at : start - 1]), f'[bold yellow]{escape(snippet[start:end])}[/]']
        at = end + 1  # past the closing bracket
    return ''.join([*out, plain(snippet[at:])])


@conversations.command(short_help='Fork a conversation; prints the new id.')
@click.argument('conversation_id')
@click.option('--at', type=int, default=None, help='Share only the first N messages.')
@click.option('--force', is_flag=True, help='Fork even if the stored history fails its hash chain.')
@click.option('--json', 'as_json', is_flag=True, help='As JSON: {conversation_id, forked_from}.')
@shared_options
def fork(
    conversation_id: str, at: int | None, force: bool, as_json: bool, db: str | None, scope: str | None, debug: bool
) -> None:
    """Fork a conversation (the shared prefix is not copied); prints the new id."""
    state = state_for(db, scope, debug)
    refuse_if_tampered(state.existing, conversation_id, state.scope, force=force, doing='fork')
    new_id = state.existing.sync.fork(conversation_id, scope=state.scope, at=at)
    if as_json:
        dump({'conversation_id': new_id, 'forked_from': conversation_id})
    else:
        click.echo(new_id)


@conversations.command()
@click.argument('conversation_id')
@click.option('--json', 'as_json', is_flag=True, help='As JSON: {deleted}.')
@shared_options
def delete(conversation_id: str, as_json: bool, db: str | None, scope: str | None, debug: bool) -> None:
    """Erase a conversation and everything recorded about it."""
    state = state_for(db, scope, debug)
    state.existing.sync.delete(conversation_id, scope=state.scope)
    if as_json:
        dump({'deleted': conversation_id})
    else:
        click.echo(f'deleted {conversation_id}')


@conversations.command(short_help="A conversation's history as wire-format JSON.")
@click.argument('conversation_id')
@click.option('--force', is_flag=True, help='Export even if the stored history fails its hash chain.')
@shared_options
def export(conversation_id: str, force: bool, db: str | None, scope: str | None, debug: bool) -> None:
    """The conversation's history as wire-format JSON (as stored; checked before it is written)."""
    from threadline.messages import ModelMessagesTypeAdapter

    state = state_for(db, scope, debug)
    refuse_if_tampered(state.reader, conversation_id, state.scope, force=force, doing='export')
    raw = state.reader.sync.raw_history(conversation_id, scope=state.scope)
    try:
        ModelMessagesTypeAdapter.validate_json(raw)
    except MessageValidationError as exc:
        raise click.ClickException(
            f'conversation {conversation_id!r}: its stored history is damaged ({exc.location}); nothing was exported'
        ) from None
    click.echo(raw.decode())


@conversations.command('import', short_help='Import a history file; prints its id.')
@click.argument('file', type=click.Path(dir_okay=False, path_type=Path))
@click.option('--cid', default=None, help='Conversation id (default: the one in the file, else a new one).')
@click.option('--as-new', is_flag=True, help='Import under a new id when the stored conversation differs.')
@click.option('--replace', 'replace_', is_flag=True, help='Replace a stored conversation that differs (a branch).')
@click.option('--json', 'as_json', is_flag=True, help='As JSON: {conversation_id, imported} (messages added).')
@shared_options
def import_(
    file: Path,
    cid: str | None,
    as_new: bool,
    replace_: bool,
    as_json: bool,
    db: str | None,
    scope: str | None,
    debug: bool,
) -> None:
    """Import a history file (validated; stored with provenance 'client'); prints its id.

    Idempotent: importing the history a conversation already holds changes nothing, and a file that
    extends it appends only the new messages. A file that diverges from it is refused unless
    --as-new (a new conversation) or --replace (a new branch of it) says what to do.
    """
    if as_new and replace_:
        raise click.UsageError('--as-new and --replace exclude each other')
    state = state_for(db, scope, debug)
    data = read_input(file)
    with progress() as bar:
        task = bar.add_task(f'importing {file.name} ({len(data) / 1e6:.1f} MB)', total=len(data) * 2)
        cid, imported = _import(
            state, data, cid, as_new=as_new, replace=replace_, step=lambda: bar.advance(task, len(data))
        )
        bar.advance(task, len(data))
    if as_json:
        dump({'conversation_id': cid, 'imported': imported})
        return
    if not imported:
        click.echo(f'{cid} already holds this history; nothing imported', err=True)
    click.echo(cid)


def _import(
    state: State, data: bytes, cid: str | None, *, as_new: bool, replace: bool, step: Callable[[], None]
) -> tuple[str, int]:
    """Store the history in `data`; (its conversation id, how many messages were added). `step` is
    called once the file is checked (the caller counts the storing that follows)."""
    from threadline.messages import ModelMessagesTypeAdapter

    messages = ModelMessagesTypeAdapter.validate_json(data)
    step()
    cid = cid or next((m.conversation_id for m in reversed(messages) if m.conversation_id), None) or uuid7()
    store = state.store.sync
    if store.conversation_state(cid, scope=state.scope) is None:
        store.append(cid, messages, scope=state.scope, provenance='client')
        return cid, len(messages)
    stored = store.load(cid, scope=state.scope)
    same = _wire(stored.messages) == _wire(messages[: len(stored.messages)])
    if same:
        fresh = messages[stored.length :]
        if fresh:
            store.append(cid, fresh, scope=state.scope, expected_revision=stored.revision, provenance='client')
        return cid, len(fresh)
    if as_new:
        cid = uuid7()
        store.append(cid, messages, scope=state.scope, provenance='client')
        return cid, len(messages)
    if replace:
        store.replace(cid, messages, scope=state.scope, expected_revision=stored.revision, provenance='client')
        return cid, len(messages)
    raise click.ClickException(
        f'conversation {cid!r} already holds a different history: pass --as-new to import it as a new '
        'conversation, or --replace to store it as a new branch of this one'
    )


def _wire(messages: Sequence[Any]) -> bytes:

    from threadline.messages import ModelMessagesTypeAdapter

    return ModelMessagesTypeAdapter.dump_json(list(messages))


def wire_time(value: datetime | None) -> str | None:
    """A time as the wire format writes it (`...Z`), or None."""
    return value.isoformat().replace('+00:00', 'Z') if value is not None else None
