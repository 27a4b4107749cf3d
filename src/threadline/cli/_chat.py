"""`threadline chat` and `threadline demo`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._app import cli, console, one_line, shared_options, state_for, warn_if_tampered

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
    if store.sync.conversation_state(cid, scope=state.scope) is not None:
        warn_if_tampered(store, cid, state.scope)
    console.print(f'conversation {cid} (model {model}); /quit to leave')
    session = _Session(store, state.scope, cid, persists_steps=model == 'demo')
    pending: str | None = None
    while True:
        try:
            line = input('you> ' if pending is None else 'you (Enter sends your last message again)> ')
        except EOFError:
            break
        if line.strip() in ('/quit', '/exit'):
            break
        if not line.strip() and pending is not None:
            line = pending
        if not line.strip():
            continue
        pending = None
        try:
            output = session.turn(agent, line)
        except _MODEL_ERRORS as exc:
            pending = line  # kept: nothing was stored, and Enter sends it again
            click.echo(f'error: {one_line(exc)} (your message was not sent)', err=True)
            continue
        console.print(f'assistant> {output}')
    console.print(f'saved as {cid}')


class _Session:
    """One chat's view of its conversation: every turn runs over what is stored now, and a turn that
    lost a race with another session (a `ConflictError`) is run again over their turns, never
    stored on top of them."""

    def __init__(self, store: Any, scope: str, conversation_id: str, *, persists_steps: bool) -> None:
        self.store, self.scope, self.conversation_id = store, scope, conversation_id
        self.persists_steps = persists_steps  # StepPersistence stores the run itself, step by step
        self.seen = self._state()[1]

    def _state(self) -> tuple[int, int]:
        return self.store.sync.conversation_state(self.conversation_id, scope=self.scope) or (0, 0)

    def turn(self, agent: Any, line: str) -> Any:
        from ..exceptions import ConflictError

        for _ in range(5):
            revision, length = self._state()
            if length > self.seen:
                console.print(f'[dim]({length - self.seen} message(s) from another session since your last turn)[/]')
            kwargs: dict[str, Any] = {'conversation_id': self.conversation_id}
            if length:
                kwargs = self.store.sync.load(self.conversation_id, scope=self.scope).run_kwargs()
            try:
                result = agent.run_sync(line, **kwargs)
                if not self.persists_steps:
                    self.store.sync.save(result, scope=self.scope, expected_revision=revision)
            except ConflictError:
                console.print('[dim](another session wrote at the same time; answering again over its turn)[/]')
                self.seen = length
                continue
            self.seen = self._state()[1]
            return result.output
        raise click.ClickException('the conversation keeps changing under this session; try again in a moment')


def _model_errors() -> tuple[type[BaseException], ...]:
    from ..exceptions import AgentRunError

    errors: list[type[BaseException]] = [AgentRunError, ConnectionError, TimeoutError]
    for module, name in (('openai', 'APIError'), ('anthropic', 'APIError'), ('httpx', 'HTTPError')):
        try:
            errors.append(getattr(__import__(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(errors)


_MODEL_ERRORS = _model_errors()
