"""`threadline memory show|edit|clear NAMESPACE`: the notebooks `Memory` keeps for a user."""

from __future__ import annotations

import click
from rich.markup import escape

from threadline.cli._app import cli, console, dump, group_state, shared_options, state_for
from threadline.exceptions import ConflictError

__all__ = ['memory']


@cli.group(short_help='Notebooks that Memory keeps per namespace.')
@shared_options
@click.pass_context
def memory(ctx: click.Context, db: str | None, scope: str | None, debug: bool) -> None:
    """Notebooks that Memory keeps per namespace (a user or tenant id), in the store's scope."""
    group_state(ctx, db, scope, debug)


@memory.command()
@click.argument('namespace')
@click.option('--json', 'as_json', is_flag=True, help='namespace, version, updated_at (…Z) and content.')
@shared_options
def show(namespace: str, as_json: bool, db: str | None, scope: str | None, debug: bool) -> None:
    """Print a namespace's notebook."""
    state = state_for(db, scope, debug)
    notebook = state.reader.sync.read_notebook(namespace, scope=state.scope)
    if as_json:
        dump(
            None
            if notebook is None
            else {
                'namespace': notebook.namespace,
                'version': notebook.version,
                'updated_at': notebook.updated_at.isoformat().replace('+00:00', 'Z'),
                'content': notebook.content,
            }
        )
        if notebook is None:
            click.get_current_context().exit(1)
        return
    if notebook is None:
        console.print(f'no notebook for {escape(namespace)!r} in scope {escape(state.scope)!r}')
        click.get_current_context().exit(1)  # a script asking for a notebook learns that there is none
    console.print(f'[dim]version {notebook.version}, updated {notebook.updated_at:%Y-%m-%d %H:%M}[/dim]')
    console.print(escape(notebook.content), end='')


@memory.command(short_help="Edit a namespace's notebook in $EDITOR.")
@click.argument('namespace')
@shared_options
def edit(namespace: str, db: str | None, scope: str | None, debug: bool) -> None:
    """Open a namespace's notebook in $EDITOR and save it (refused if it changed meanwhile)."""
    state = state_for(db, scope, debug)
    store = state.store.sync
    notebook = store.read_notebook(namespace, scope=state.scope)
    before = notebook.content if notebook else ''
    after = click.edit(before, extension='.md')
    if after is None or after == before:
        console.print('unchanged')
        return
    try:
        written = store.write_notebook(
            namespace, after, scope=state.scope, expected_version=notebook.version if notebook else 0
        )
    except ConflictError:
        raise click.ClickException('the notebook changed while you edited it; nothing was saved, edit again') from None
    console.print(f'saved (version {written.version})')


@memory.command()
@click.argument('namespace')
@click.option('--yes', is_flag=True, help='Do not ask.')
@shared_options
def clear(namespace: str, yes: bool, db: str | None, scope: str | None, debug: bool) -> None:
    """Erase a namespace's notebook."""
    state = state_for(db, scope, debug)
    if not yes and not click.confirm(f'erase the notebook of {namespace!r} in scope {state.scope!r}?'):
        raise click.Abort()
    erased = state.existing.sync.delete_notebook(namespace, scope=state.scope)
    console.print('erased' if erased else f'no notebook for {escape(namespace)!r}')
