"""`threadline conversations prune`: delete conversations by age or count, asking first at a terminal."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from threadline.cli._app import console, dump, progress, shared_options, state_for
from threadline.cli._conversations import conversations, row
from threadline.exceptions import ConversationNotFound

if TYPE_CHECKING:
    from threadline.storage import SyncStore

__all__ = ['prune']


@conversations.command(short_help='Delete old conversations (retention).')
@click.option('--older-than', 'older_than', default=None, help='Age like 30d, 12h, 90m.')
@click.option('--keep-last', type=int, default=None, help='Keep the newest N per scope.')
@click.option('--all-scopes', is_flag=True, help='Prune every scope (an operator action).')
@click.option('--dry-run', is_flag=True, help='List what would be deleted, and delete nothing.')
@click.option('-y', '--yes', is_flag=True, help='Do not ask before deleting (at a terminal it asks).')
@click.option('--json', 'as_json', is_flag=True, help='As JSON: {deleted: [ids], dry_run}.')
@shared_options
def prune(
    older_than: str | None,
    keep_last: int | None,
    all_scopes: bool,
    dry_run: bool,
    yes: bool,
    as_json: bool,
    db: str | None,
    scope: str | None,
    debug: bool,
) -> None:
    """Delete old conversations (retention). At a terminal it shows how many and asks first."""

    if older_than is None and keep_last is None:
        raise click.UsageError('say what to prune: --older-than AGE, --keep-last N, or both')
    state = state_for(db, scope, debug)
    cutoff = datetime.now(tz=UTC) - _age(older_than) if older_than else None
    if not all_scopes:
        doomed = _doomed(state.reader.sync.list(state.scope, limit=10**9), cutoff, keep_last)
        if dry_run:
            if as_json:
                dump({'deleted': [r.conversation_id for r in doomed], 'dry_run': True})
                return
            for summary in doomed:
                console.print(row(summary, short=False))
            click.echo(f'would delete {len(doomed)} conversation(s) in scope {state.scope!r}')
            return
        if doomed and not yes and sys.stdin.isatty() and sys.stdout.isatty():
            click.confirm(f'delete {len(doomed)} conversation(s) in scope {state.scope!r}?', abort=True)
    elif dry_run:
        raise click.UsageError('--dry-run lists one scope at a time: drop --all-scopes and pass --scope')
    elif not yes and sys.stdin.isatty() and sys.stdout.isatty():
        click.confirm('prune every scope of this database?', abort=True)
    if all_scopes:
        deleted = _prune_every_scope(state.existing.sync, cutoff, keep_last)
    else:
        deleted = _delete_each(state.existing.sync, [r.conversation_id for r in doomed], state.scope)
        if cutoff is not None:  # the store's prune also erases the notebooks not written since
            deleted += state.existing.sync.prune(older_than=cutoff, scope=state.scope)
    if as_json:
        dump({'deleted': deleted, 'dry_run': False})
    else:
        click.echo(f'deleted {len(deleted)} conversation(s)')


def _prune_every_scope(store: SyncStore, cutoff: datetime | None, keep_last: int | None) -> list[str]:
    """Prune scope by scope with a bar over the scopes, then once across every scope for what the
    loop could not see (a scope made meanwhile, notebooks in a scope without conversations)."""
    from threadline.storage import EVERY_SCOPE

    deleted: list[str] = []
    scopes = sorted(store.scope_counts(EVERY_SCOPE))
    with progress() as bar:
        task = bar.add_task('pruning every scope', total=len(scopes) + 1)
        for scope in scopes:
            deleted += store.prune(older_than=cutoff, keep_last=keep_last, scope=scope)
            bar.advance(task)
        deleted += store.prune(older_than=cutoff, keep_last=keep_last, scope=EVERY_SCOPE)
        bar.advance(task)
    return deleted


def _delete_each(store: SyncStore, conversation_ids: list[str], scope: str) -> list[str]:
    """Delete the conversations one by one, with a progress bar at a terminal; the ids deleted (one
    deleted meanwhile by someone else is skipped)."""

    deleted: list[str] = []
    with progress() as bar:
        task = bar.add_task('pruning', total=len(conversation_ids))
        for conversation_id in conversation_ids:
            try:
                store.delete(conversation_id, scope=scope)
                deleted.append(conversation_id)
            except ConversationNotFound:
                pass
            bar.advance(task)
    return deleted


def _doomed(rows: Sequence[Any], cutoff: datetime | None, keep_last: int | None) -> list[Any]:
    """What `prune` deletes in one scope: not updated since `cutoff`, or past the newest `keep_last`
    (the store's rule; a test checks the two agree)."""
    ordered = sorted(rows, key=lambda r: (r.updated_at, r.conversation_id), reverse=True)
    return [
        r
        for rank, r in enumerate(ordered, start=1)
        if (cutoff is not None and r.updated_at < cutoff) or (keep_last is not None and rank > keep_last)
    ]


def _age(text: str) -> timedelta:
    units = {'d': 'days', 'h': 'hours', 'm': 'minutes', 's': 'seconds', 'w': 'weeks'}
    try:
        return timedelta(**{units[text[-1]]: float(text[:-1])})
    except (KeyError, ValueError):
        raise click.ClickException(f'--older-than {text!r}: use a number and a unit, like 30d, 12h or 90m') from None
