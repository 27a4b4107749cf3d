"""`threadline serve`: the chat server (extra `server`) over a store, for people and chat UIs."""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from threadline.cli._app import cli, console, shared_options, state_for

if TYPE_CHECKING:
    from threadline.agent import Agent
    from threadline.server import TurnAgent
    from threadline.trust import Keyring

LOOPBACK = ('127.0.0.1', '::1', 'localhost')


def read_keys(keys_file: Path | None) -> dict[str, str] | None:
    """API keys and their scopes from `THREADLINE_API_KEYS` (`key=scope,key=scope`) and/or a file
    (one `key=scope` per line, `#` comments); None when neither names any (dev mode)."""
    lines = [item for item in os.environ.get('THREADLINE_API_KEYS', '').split(',') if item.strip()]
    if keys_file is not None:
        lines += [
            line for line in keys_file.read_text().splitlines() if line.strip() and not line.lstrip().startswith('#')
        ]
    keys: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        key, sep, scope = line.strip().partition('=')
        if not sep or not key.strip() or not scope.strip():
            raise click.UsageError(f'API key entry {number}: write it as key=scope (the key itself is not shown here)')
        keys[key.strip()] = scope.strip()
    return keys or None


def is_loopback(host: str) -> bool:
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@cli.command(short_help='Serve the chat API, the page and conversations.')
@click.option(
    '-m', '--model', default='demo', help="'demo' (offline, the default), or a provider model like openai:gpt-5.2."
)
@click.option(
    '--agent',
    'agent_spec',
    default=None,
    metavar='MODULE:ATTR',
    help='Serve this agent (a Threadline or a pydantic-ai Agent) instead of -m: e.g. app.agents:support.',
)
@click.option('--host', default='127.0.0.1', show_default=True, help='Address to bind (not loopback needs API keys).')
@click.option('--port', default=8000, show_default=True, type=int, help='The port to listen on.')
@click.option(
    '--keys-file',
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    default=None,
    help='API keys, one key=scope per line (also THREADLINE_API_KEYS).',
)
@click.option('--stateless', is_flag=True, help='Keep no history: the client holds it, signed (THREADLINE_TRUST_KEYS).')
@click.option(
    '--envelope-ttl',
    type=click.FloatRange(min=1),
    default=86_400.0,
    show_default=True,
    help='With --stateless: seconds a signed history is accepted back (bounds how far a client can roll back).',
)
@click.option(
    '--allowed-host',
    'allowed_hosts',
    multiple=True,
    help='A Host this server answers for (repeat; default: loopback names in dev mode, any with keys).',
)
@click.option(
    '--lease-ttl',
    type=click.FloatRange(min=1),
    default=60.0,
    show_default=True,
    help='Seconds a server that died mid-turn blocks its conversation (with --durable: before another takes the turn).',
)
@click.option(
    '--durable',
    is_flag=True,
    help="Run each turn as a DBOS workflow: one cut off by a crash is finished after it (extra 'dbos').",
)
@click.option(
    '--executor-id',
    default=None,
    help="With --durable: this server's DBOS executor id, kept across restarts (default: serve-HOST-PORT).",
)
@click.option(
    '--expect-outcome',
    is_flag=True,
    help="Audits ask each conversation's last run for an outcome receipt (else only runs of effect tools owe one).",
)
@shared_options
def serve(
    model: str,
    agent_spec: str | None,
    host: str,
    port: int,
    keys_file: Path | None,
    stateless: bool,
    envelope_ttl: float,
    allowed_hosts: tuple[str, ...],
    lease_ttl: float,
    durable: bool,
    executor_id: str | None,
    expect_outcome: bool,
    db: str | None,
    scope: str | None,
    debug: bool,
) -> None:
    """Serve the chat API (Vercel AI at /api/chat, AG-UI at /api/ag-ui) and conversation endpoints."""
    from threadline.agent import Agent
    from threadline.models import infer_model

    try:
        import uvicorn

        from threadline.server import DEV_SCOPE, create_app
    except ImportError:
        raise click.ClickException(
            "threadline serve needs the 'server' extra: pip install 'threadline[server]'"
        ) from None
    keys = read_keys(keys_file)
    if keys is None and not is_loopback(host):
        raise click.UsageError(
            f'refusing to serve on {host} without API keys: set THREADLINE_API_KEYS or --keys-file, or bind to 127.0.0.1'
        )
    if not stateless and not is_loopback(host) and not _store_key_configured():
        raise click.UsageError(
            f'refusing to serve on {host} without a store key: set THREADLINE_STORE_KEYS (id=hex,...) or '
            'THREADLINE_STORE_KEYS_FILE, the same on every server of this database (a key made for this machine '
            'would seal what the others cannot check), or bind to 127.0.0.1'
        )
    state = state_for(db, scope, debug)
    agent = load_agent(agent_spec) if agent_spec else Agent(infer_model(model))
    if durable:
        if stateless or not isinstance(agent, Agent):
            raise click.UsageError('--durable keeps history on the server and runs a Threadline Agent')
        _configure_dbos(state.store, executor_id or f'serve-{socket.gethostname()}-{port}')
    app = create_app(
        state.store,
        agent,
        keys=keys,
        stateless=_trust_keys() if stateless else None,
        envelope_ttl=envelope_ttl,
        allowed_hosts=list(allowed_hosts) or None,
        durable=durable,
        lease_ttl=lease_ttl,
        expect_outcome=expect_outcome,
    )
    if keys is None:
        console.print(
            f'[bold yellow]dev mode[/]: no API keys, loopback only, one scope ({DEV_SCOPE!r}); '
            'set THREADLINE_API_KEYS=key=scope,... to serve tenants'
        )
    if not stateless:
        _warn_of_unknown_seal_keys(state.store)
    console.print(f'serving {state.db} with {agent_spec or "model " + model} on http://{host}:{port}')
    uvicorn.run(app, host=host, port=port, log_level='warning')


def _warn_of_unknown_seal_keys(store: Any) -> None:
    """Say at start-up, not at the first audit, that some stored seals carry key ids this server
    holds no key for (another server sealed them with its own key): their audits will fail."""
    unknown = getattr(store.sync, 'unknown_seal_keys', None)  # SQL stores: one index seek per key id
    ids = unknown() if callable(unknown) else []
    if ids:
        click.echo(
            f'warning: this database holds seals made with key id(s) {", ".join(ids)}, which this server does not '
            'hold: audits of those conversations will report UNTRUSTED_HISTORY. Give every server of this '
            'database the same THREADLINE_STORE_KEYS (the old key may stay in it, after the active one).',
            err=True,
        )


def _store_key_configured() -> bool:
    """Whether the store key comes from the environment (so every server can share it), not from
    the per-install key a lone machine makes for itself."""
    return bool(os.environ.get('THREADLINE_STORE_KEYS') or os.environ.get('THREADLINE_STORE_KEYS_FILE'))


def _configure_dbos(store: object, executor_id: str) -> None:
    """DBOS for `--durable`, its system database with the store's (see `dbos_config`)."""
    try:
        from dbos import DBOS

        from threadline.durable import dbos_config
    except ImportError:
        raise click.ClickException("--durable needs the 'dbos' extra: pip install 'threadline[dbos]'") from None
    from threadline.exceptions import UserError

    try:
        config = dbos_config(store, name='threadline-serve', executor_id=executor_id, log_level='WARNING')
    except UserError as error:
        raise click.UsageError(f'--durable: {error}') from None
    DBOS(config=config)


def _trust_keys() -> Keyring:
    """The keys that sign client-held histories: `THREADLINE_TRUST_KEYS`, or a key made for this
    process (said so: its envelopes do not survive a restart, nor verify on another server)."""
    from threadline.trust import Keyring

    if os.environ.get('THREADLINE_TRUST_KEYS'):
        return Keyring.from_env()
    console.print(
        '[yellow]stateless[/]: no THREADLINE_TRUST_KEYS, so histories are signed with a key made for this process'
    )
    return Keyring.single(secrets.token_bytes(32), key_id='ephemeral')


def load_agent(spec: str) -> Agent[Any, Any] | TurnAgent:
    """The agent `spec` names (`module:attr`, the module importable from the current directory):
    a Threadline `Agent` as it is, a pydantic-ai one given the face the server runs."""
    import importlib
    import sys

    from threadline.agent import Agent

    module_name, _, attribute = spec.partition(':')
    if not module_name or not attribute:
        raise click.UsageError(f'--agent {spec!r}: give MODULE:ATTR, e.g. app.agents:support')
    if '' not in sys.path:
        sys.path.insert(0, '')  # as `python -m` and uvicorn do: the current directory's modules
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise click.UsageError(f'--agent {spec!r}: {type(exc).__name__}: {exc}') from None
    if isinstance(found, Agent):
        return found
    if type(found).__module__.split('.')[0] == 'pydantic_ai':
        from threadline.pydantic_ai import ServedAgent

        return ServedAgent(found)
    raise click.UsageError(f'--agent {spec!r} is a {type(found).__name__}, not a Threadline or pydantic-ai Agent')
