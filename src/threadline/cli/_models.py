"""`threadline models`: the model a command uses when `-m` does not say, and the known ones.

Which model a turn runs on, first match:
1. `-m NAME`;
2. continuing a conversation (`-c`, `--cid`): the model of its last run, so a conversation
   started on `openai:gpt-5.2` is not continued by the offline demo;
3. the default set with `threadline models default NAME` (kept in `config.json` beside the store
   key, `$THREADLINE_HOME`);
4. `demo`, the offline model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from threadline.cli._app import cli, console
from threadline.cli._settings import read_private, user_file, write_private

__all__ = ['default_model', 'model_of_conversation', 'models']

KNOWN = (
    ('demo', 'offline: the demo support agent with its tools'),
    ('test', 'offline: answers with a fixed text, calls every tool'),
    ('openai:gpt-5.2', 'OpenAI (OPENAI_API_KEY); any openai:MODEL works'),
    ('openai-responses:gpt-5.2', "OpenAI's Responses API"),
    ('anthropic:claude-sonnet-4-6', 'Anthropic (ANTHROPIC_API_KEY); any anthropic:MODEL works'),
    ('google:gemini-2.5-flash', 'Google (GOOGLE_API_KEY); any google:MODEL works'),
)
_PREFIX = {'threadline-demo': None, 'test': None, 'openai': 'openai', 'anthropic': 'anthropic', 'google': 'google'}


def read_config() -> dict[str, Any]:
    return read_private(user_file('config.json'))


def write_config(settings: dict[str, Any]) -> Path:
    return write_private(user_file('config.json'), settings)


def model_of_conversation(store: Any, conversation_id: str, scope: str) -> str | None:
    """The `-m` name of the model the conversation's last run used, or None (no run, or a model
    this command cannot name)."""
    runs = store.sync.list_runs(conversation_id, scope=scope)
    last = _last_response(store, conversation_id, scope) if runs else None
    if last is None:
        return None
    provider = last.provider_name or ''
    name = next((r.model_name for r in reversed(runs) if r.model_name), None) or last.model_name
    if provider == 'threadline-demo':
        return 'demo'
    if provider == 'test':
        return 'test'
    prefix = _PREFIX.get(provider)
    return f'{prefix}:{name}' if prefix and name else None


def _last_response(store: Any, conversation_id: str, scope: str) -> Any:
    """The conversation's last response: looked for in its last messages, and only if none is
    there in the whole history (a long conversation is not decoded whole to name its model)."""
    for window in (16, None):
        stored = store.sync.load(conversation_id, scope=scope, last=window)
        responses = [m for m in stored.messages if getattr(m, 'kind', None) == 'response']
        if responses:
            return responses[-1]
        if stored.offset == 0:
            return None
    return None


def default_model() -> str:
    return str(read_config().get('default_model') or 'demo')


@cli.group(short_help='The models -m takes, and the default.', invoke_without_command=True)
@click.pass_context
def models(ctx: click.Context) -> None:
    """The models -m takes, and the default used when it is not given."""
    if ctx.invoked_subcommand is not None:
        return
    current = default_model()
    for name, what in KNOWN:
        mark = '*' if name == current else ' '
        console.print(f'{mark} {name:<28} {what}')
    if current not in {n for n, _ in KNOWN}:
        console.print(f'* {current:<28} (the default)')


@models.command('default', short_help='Show or set the default model.')
@click.argument('name', required=False)
def default(name: str | None) -> None:
    """Show the default model, or set it to NAME (checked first: it must be a model)."""
    if name is None:
        click.echo(default_model())
        return
    from threadline.exceptions import UserError
    from threadline.models import UnknownModel, infer_model

    if name not in ('demo', 'test'):
        try:
            infer_model(name)
        except UnknownModel:
            raise click.ClickException(f'{name!r} is not a model; see threadline models') from None
        except UserError:
            pass  # a missing API key or extra is for when the model is used, not named
    settings = read_config()
    settings['default_model'] = name
    path = write_config(settings)
    click.echo(f'default model: {name} (in {path})', err=True)
