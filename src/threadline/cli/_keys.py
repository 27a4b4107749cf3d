"""`threadline keys`: provider API keys kept for the user, as `llm keys` keeps them.

A command takes a provider's key from `--key`, else its environment variable, else the one
stored here (`keys.json` beside the store key, 0600; see `_settings`). A key is never printed.
"""

from __future__ import annotations

import sys

import click

from threadline.cli._app import cli
from threadline.cli._settings import read_private, user_file, write_private

__all__ = ['keys', 'stored_key']

PROVIDERS = ('openai', 'anthropic', 'google')


def stored_key(provider: str) -> str | None:
    value = read_private(user_file('keys.json')).get(provider)
    return value if isinstance(value, str) and value else None


@cli.group(short_help='API keys stored for the providers.')
def keys() -> None:
    """API keys stored for the providers (used when the environment has none)."""


@keys.command('set')
@click.argument('provider', type=click.Choice(PROVIDERS))
def set_key(provider: str) -> None:
    """Store PROVIDER's API key: typed at a hidden prompt, or piped in."""
    typed = sys.stdin.isatty()
    value = (click.prompt(f'{provider} API key', hide_input=True) if typed else sys.stdin.readline()).strip()
    if not value:
        raise click.ClickException('no key given: nothing stored')
    path = user_file('keys.json')
    stored = read_private(path)
    stored[provider] = value
    write_private(path, stored)
    click.echo(f'stored the {provider} key in {path}', err=True)


@keys.command('list')
def list_keys() -> None:
    """The providers with a stored key (never the keys)."""
    for provider in sorted(read_private(user_file('keys.json'))):
        click.echo(provider)


@keys.command('path')
def key_path() -> None:
    """Where the keys are kept."""
    click.echo(user_file('keys.json'))
