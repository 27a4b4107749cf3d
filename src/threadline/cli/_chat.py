"""`threadline chat` and `threadline demo`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._app import cli, console, shared_options, state_for

__all__ = ['chat', 'demo']


@cli.command()
@shared_options
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
@shared_options
def chat(model: str, cont: bool, cid: str | None, db: str | None, scope: str | None, debug: bool) -> None:
    """An interactive conversation, saved to the store after every turn (/quit or Ctrl-D ends it)."""
    from .._uuid import uuid7
    from ..agent import Agent
    from ..models import infer_model

    state = state_for(db, scope, debug)
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
