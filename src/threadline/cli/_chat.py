"""`threadline chat` and `threadline demo`."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from threadline._uuid import uuid7
from threadline.cli._app import State, cli, console, notes, refuse_if_tampered, shared_options, state_for
from threadline.exceptions import AgentRunError, ConflictError, MissingAPIKey, UserError

if TYPE_CHECKING:  # the CLI loads what a command uses when it runs (see cli/README.md)
    from threadline.storage import AsyncStore, SyncStore

__all__ = ['chat', 'demo', 'prompt']


@cli.command(short_help='Run the narrated, offline demo of the whole system.')
@shared_options
def demo(db: str | None, scope: str | None, debug: bool) -> None:
    """Run the narrated, offline demo of the whole system (exit 0 only if every step held)."""
    import platformdirs

    from threadline.cli._demo import DemoFailed, run_demo

    if db is None:
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


_LEAVE = ('exit', 'quit', '/quit', '/exit')
_CommandT = TypeVar('_CommandT', bound=Callable[..., object])


def _model_options(options: tuple[tuple[str, str], ...]) -> dict[str, Any] | None:
    """`-o key value` pairs as model settings (values read as JSON when they are JSON: `-o temperature 0.2`)."""

    settings: dict[str, Any] = {}
    for key, value in options:
        try:
            settings[key] = json.loads(value)
        except ValueError:
            settings[key] = value
    return settings or None


def _agent_for(state: State, model: str, system: str | None, key: str | None = None) -> Any:

    from threadline.agent import Agent
    from threadline.cli._support import Payments, support_agent
    from threadline.models import infer_model

    if model == 'demo':  # the demo model comes with the demo's support tools
        if system is not None:
            raise click.UsageError('-s/--system is for provider models; the demo model has its own prompt')
        payments = (
            Path(state.db).with_name('chat-payments.jsonl') if '://' not in state.db else Path('chat-payments.jsonl')
        )
        return support_agent(state.store, state.scope, Payments(payments), approve_refunds=True)

    try:
        resolved = _with_key(infer_model(model), key) if key else infer_model(model)
        getattr(resolved, 'provider', None)  # a missing API key or extra fails now, not after the first message
    except MissingAPIKey as exc:
        resolved = _stored_key_model(model, exc)
    except UserError as exc:
        raise click.ClickException(_in_cli_terms(exc, model)) from None
    return Agent(resolved, system_prompt=system or 'You are a helpful assistant.')


def _stored_key_model(model: str, missing: MissingAPIKey) -> Any:
    """`model` with the key `threadline keys set` stored for its provider, when the environment had none."""
    from threadline.cli._keys import stored_key
    from threadline.models import infer_model

    key = stored_key(missing.provider)
    if key is None:
        raise click.ClickException(_in_cli_terms(missing, model)) from None
    return _with_key(infer_model(model), key)


def _in_cli_terms(error: Exception, model: str) -> str:
    """A model error told the way the command line is used (flags, not Python arguments)."""
    from threadline.models import UnknownModel

    if isinstance(error, UnknownModel):
        guess = _provider_of(model)
        if guess:
            return f'-m {model!r}: not a model; name its provider: -m {guess}:{model}'
        return (
            f'-m {model!r}: not a model; use -m demo, -m test, or a provider model like openai:gpt-5.2, '
            'anthropic:claude-sonnet-4-6 or google:gemini-2.5-flash'
        )
    if isinstance(error, MissingAPIKey):
        return (
            f'the {error.provider} provider needs an API key: set {error.variable}, '
            f'run threadline keys set {error.provider}, or pass --key'
        )
    return str(error)


_FAMILIES = (('gpt-', 'openai'), ('o1', 'openai'), ('o3', 'openai'), ('o4', 'openai'), ('claude-', 'anthropic'))


def _provider_of(model: str) -> str | None:
    """The provider a bare model name most likely belongs to (`gpt-5.2` -> `openai`), for a hint."""
    if ':' in model:
        return None
    if model.startswith('gemini-'):
        return 'google'
    return next((provider for prefix, provider in _FAMILIES if model.startswith(prefix)), None)


def _with_key(model: Any, key: str) -> Any:
    """`model` talking to its provider with `key` instead of the environment's."""
    import importlib

    providers = {
        'openai': ('openai', 'OpenAIProvider'),
        'anthropic': ('anthropic', 'AnthropicProvider'),
        'google': ('google', 'GoogleProvider'),
    }
    where = providers.get(getattr(model, 'provider_name', ''))
    if where is None:
        raise click.UsageError(f'--key is for provider models (openai:, anthropic:, google:), not {model.model_name!r}')

    provider_class = getattr(importlib.import_module(f'threadline.models.{where[0]}'), where[1])
    return type(model)(model.model_name, provider=provider_class(api_key=key))


def _conversation_for(state: State, cont: bool, cid: str | None, force: bool) -> str:
    """The conversation to talk in: `--cid` (an unknown one is said so, then started under that
    id, so scripts can name their conversations), the latest with -c, else a new one. One whose
    stored history fails its seal is refused (a model would be run over edited history and a turn
    stored on it), unless `force`."""

    store = state.store
    if cid == 'new':  # an Agent reads conversation_id='new' as "mint a fresh id": it cannot name one
        raise click.UsageError(
            "--cid 'new' is reserved (it means a fresh conversation): leave --cid out, or pick another id"
        )
    if cid is not None:
        if store.sync.conversation_state(cid, scope=state.scope) is None:
            click.echo(f'no conversation found with id={cid} in scope {state.scope!r}: starting it', err=True)
        else:
            refuse_if_tampered(store, cid, state.scope, force=force, doing='continue')
        return cid
    if cont:
        latest = store.sync.list(state.scope, limit=1)
        if not latest:
            raise click.ClickException(f'no conversation to continue in scope {state.scope!r}')
        refuse_if_tampered(store, latest[0].conversation_id, state.scope, force=force, doing='continue')
        return str(latest[0].conversation_id)
    return uuid7()


def _model_name(state: State, model: str | None, cid: str) -> str:
    """`-m`, else the model the conversation last ran on, else the user's default (see `_models`)."""
    from threadline.cli._models import default_model, model_of_conversation

    if model is not None:
        return model
    if state.store.sync.conversation_state(cid, scope=state.scope) is not None:
        remembered = model_of_conversation(state.store, cid, state.scope)
        if remembered is not None:
            return remembered
    return default_model()


def _model_option(fn: _CommandT) -> _CommandT:
    fn = click.option(
        '--force', is_flag=True, help='Continue a conversation even if its stored history fails its seal.'
    )(fn)
    fn = click.option('-o', '--option', 'options', multiple=True, nargs=2, help='A model setting: -o temperature 0.2')(
        fn
    )
    fn = click.option('-s', '--system', default=None, help='The system prompt (provider models).')(fn)
    fn = click.option('--key', default=None, help="The provider's API key (default: its environment variable).")(fn)
    fn = click.option('--cid', default=None, help='Continue this conversation (or start one with this id).')(fn)
    fn = click.option('-c', '--continue', 'cont', is_flag=True, help='Continue the latest conversation.')(fn)
    return click.option(
        '-m',
        '--model',
        default=None,
        help="'demo', 'test', or a provider model like openai:gpt-5.2 (default: the conversation's own, "
        "else 'threadline models default').",
    )(fn)


@cli.command(short_help='Talk with a model; every turn is stored.')
@_model_option
@shared_options
def chat(
    model: str | None,
    cont: bool,
    cid: str | None,
    system: str | None,
    key: str | None,
    options: tuple[tuple[str, str], ...],
    force: bool,
    db: str | None,
    scope: str | None,
    debug: bool,
) -> None:
    """An interactive conversation, saved to the store after every turn.

    \b
    Leave with exit, quit or Ctrl-D. Line editing and history come from readline.
    !multi    type several lines; end them with !end
    !edit     write the message in $EDITOR
    """
    with contextlib.suppress(ImportError):  # not on every platform
        import readline  # noqa: F401 - importing it gives input() line editing and history
    state = state_for(db, scope, debug)
    cid = _conversation_for(state, cont, cid, force)
    model = _model_name(state, model, cid)
    agent = _agent_for(state, model, system, key)
    console.print(f'conversation {cid} (model {model}); exit, quit or Ctrl-D to leave, !multi, !edit')
    session = _Session(state.store, state.scope, cid, persists_steps=model == 'demo', settings=_model_options(options))
    try:
        _converse(session, agent)
    except KeyboardInterrupt:  # Ctrl-C leaves like Ctrl-D does: what was stored stays, and says where
        console.print('\n(interrupted)')
    console.print(f'saved as {cid}')


def _converse(session: _Session, agent: Any) -> None:
    """Read, answer and store turns until the user leaves; a failed turn keeps its message."""
    pending: str | None = None
    while True:
        try:
            line = input('you> ' if pending is None else 'you (Enter sends your last message again)> ')
        except EOFError:
            return
        if line.strip().lower() in _LEAVE:
            return
        line = _expand(line)
        if not line.strip() and pending is not None:
            line = pending
        if not line.strip():
            continue
        pending = None
        shown = _printer(prefix='assistant> ')
        try:
            output = session.turn(agent, line, shown)
        except _model_errors() as exc:
            shown.done()
            pending = line  # kept: nothing was stored, and Enter sends it again
            click.echo(f'error: {_said(exc, agent)} (your message was not sent)', err=True)
            continue
        if not shown.done():
            console.print(f'assistant> {output}', markup=False)


def _expand(line: str) -> str:
    """`!multi` reads lines up to `!end`; `!edit` opens $EDITOR; anything else is the message."""
    command = line.strip()
    if command == '!multi':
        lines: list[str] = []
        while True:
            try:
                more = input('... ')
            except EOFError:
                break
            if more.strip() == '!end':
                break
            lines.append(more)
        return '\n'.join(lines)
    if command == '!edit':
        return (click.edit('') or '').strip()
    return line


@cli.command(short_help='Send one message and print the answer.')
@click.argument('text', required=False)
@_model_option
@shared_options
def prompt(
    text: str | None,
    model: str | None,
    cont: bool,
    cid: str | None,
    system: str | None,
    key: str | None,
    options: tuple[tuple[str, str], ...],
    force: bool,
    db: str | None,
    scope: str | None,
    debug: bool,
) -> None:
    """Send one message, print the answer, and store the turn (-c continues the latest
    conversation, --cid a given one). Text piped in is read too (`-` or no TEXT: only it; with
    TEXT: TEXT, a blank line, then it)."""
    text = _with_stdin(text)
    state = state_for(db, scope, debug)
    cid = _conversation_for(state, cont, cid, force)
    model = _model_name(state, model, cid)
    agent = _agent_for(state, model, system, key)
    session = _Session(state.store, state.scope, cid, persists_steps=model == 'demo', settings=_model_options(options))
    shown = _printer()
    try:
        output = session.turn(agent, text, shown)
    except _model_errors() as exc:
        raise click.ClickException(_said(exc, agent)) from None
    finally:
        printed = shown.done()
    if not printed:
        click.echo(output)
    click.echo(f'(conversation {cid})', err=True)


def _said(error: BaseException, agent: Any) -> str:
    """A failed model request in one line (see `_errors`)."""
    from threadline.cli._errors import model_error_line

    return model_error_line(error, getattr(agent, 'model', None))


def _printer(prefix: str = '') -> Any:
    """What prints an answer as it streams (see `_stream`)."""
    from threadline.cli._stream import StreamPrinter

    return StreamPrinter(notes, prefix=prefix)


def _with_stdin(text: str | None) -> str:
    """The message: TEXT and/or what was piped in, as `llm` joins them."""
    try:
        piped = '' if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read().strip()
    except (OSError, ValueError):  # no readable stdin (closed, or held by a test runner)
        piped = ''
    if text == '-':
        text = None
    message = '\n\n'.join(part for part in (text, piped) if part)
    if not message:
        raise click.UsageError('give the message as TEXT, or pipe it in: echo hello | threadline prompt')
    return message


def _forget_last_input() -> None:
    """Drop an approval's y/n from readline's history, so Up recalls messages, not answers."""
    readline = sys.modules.get('readline')  # only when chat loaded it: prompt never does
    if readline is not None and readline.get_current_history_length() > 0:
        readline.remove_history_item(readline.get_current_history_length() - 1)


class _Session:
    """One chat's view of its conversation: every turn runs over what is stored now, and a turn that
    lost a race with another session (a `ConflictError`) is run again over their turns, never
    stored on top of them."""

    def __init__(
        self,
        store: AsyncStore[SyncStore],
        scope: str,
        conversation_id: str,
        *,
        persists_steps: bool,
        settings: Any = None,
    ) -> None:
        self.store, self.scope, self.conversation_id = store, scope, conversation_id
        self.settings = settings
        self.persists_steps = persists_steps  # StepPersistence stores the run itself, step by step
        self.seen = self._state()[1]
        self.shown: Any = None

    def _state(self) -> tuple[int, int]:
        return self.store.sync.conversation_state(self.conversation_id, scope=self.scope) or (0, 0)

    def turn(self, agent: Any, line: str, shown: Any = None) -> Any:
        """The answer to `line`, stored; asked again over the other session's turns when one wrote
        first, five times at most (then a `ClickException`, never an empty answer). `shown`: an
        event stream handler that prints the answer as it comes."""
        self.shown = shown
        for _ in range(5):
            revision, length = self._state()
            if length > self.seen:
                notes.print(f'[dim]({length - self.seen} message(s) from another session since your last turn)[/]')
            kwargs: dict[str, Any] = {'conversation_id': self.conversation_id}
            if length:
                kwargs = self.store.sync.load(self.conversation_id, scope=self.scope).run_kwargs()
            try:
                result = agent.run_sync(line, model_settings=self.settings, event_stream_handler=self.shown, **kwargs)
                if not self.persists_steps:
                    self.store.sync.save(result, scope=self.scope, expected_revision=revision)
            except ConflictError:
                if self.shown is not None:
                    self.shown.done()
                notes.print('[dim](another session wrote at the same time; answering again over its turn)[/]')
                self.seen = length
                continue
            result = self._approvals(agent, result)
            self.seen = self._state()[1]
            return result.output
        raise click.ClickException('the conversation keeps changing under this session; try again in a moment')

    def _approvals(self, agent: Any, result: Any) -> Any:
        """While the run waits on calls that need approval: ask at the terminal (arguments shown),
        y or n for each, and resume it. Without a terminal every call is denied."""
        from threadline.agent import DeferredToolRequests, DeferredToolResults, ToolDenied

        while isinstance(result.output, DeferredToolRequests) and result.output.approvals:
            decisions: dict[str, Any] = {}
            if self.shown is not None:
                self.shown.done()  # the spinner off and the line ended before the question
            for call in result.output.approvals:
                question = f'allow {call.tool_name}({call.args_as_json_str()})?'
                allowed = sys.stdin.isatty() and click.confirm(question, default=False)
                _forget_last_input()
                decisions[call.tool_call_id] = True if allowed else ToolDenied('The user did not approve this call.')
            stored = self.store.sync.load(self.conversation_id, scope=self.scope)
            result = agent.run_sync(
                deferred_tool_results=DeferredToolResults(approvals=decisions),
                model_settings=self.settings,
                event_stream_handler=self.shown,
                **stored.run_kwargs(),
            )
            if not self.persists_steps:
                self.store.sync.save(result, scope=self.scope, expected_revision=stored.revision)
        return result


def _model_errors() -> tuple[type[BaseException], ...]:
    """The errors a model request may raise: only SDKs already loaded can raise theirs, so none is
    imported here (importing them cost every command a second at start-up)."""
    errors: list[type[BaseException]] = [AgentRunError, ConnectionError, TimeoutError]
    for module, name in (('openai', 'APIError'), ('anthropic', 'APIError'), ('httpx', 'HTTPError')):
        found = getattr(sys.modules.get(module), name, None)
        if isinstance(found, type) and issubclass(found, BaseException):
            errors.append(found)
    return tuple(errors)
