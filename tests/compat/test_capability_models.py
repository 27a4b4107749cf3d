"""A model chosen, resolved or wrapped by capabilities (`get_model`, `resolve_model_id`,
`get_wrapper_model` with `WrapperModel`) as pydantic-ai 2.62 runs them, one script body on both
libraries: which model answers each request, and what the selectors and resolvers are told."""

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library_with

LIBS = ('ref', 'ours')


def _names(name: str) -> SimpleNamespace:
    return library_with(name, exceptions=('UserError',), **{'models.wrapper': ('WrapperModel',)})


def labelled(lib: SimpleNamespace, label: str, answered: list[str], calls: int = 0) -> Any:
    """A model named `label` that notes it answered; it calls `shout` on its first `calls` requests."""

    def model(messages: list[Any], info: Any) -> Any:
        answered.append(label)
        if len(answered) <= calls:
            return lib.ModelResponse(parts=[lib.ToolCallPart('shout', {'word': label}, f'c{len(answered)}')])
        return lib.ModelResponse(parts=[lib.TextPart(f'from {label}')])

    return lib.FunctionModel(model, model_name=label)


def shout(word: str) -> str:
    return word.upper()


def capability(lib: SimpleNamespace, **hooks: Any) -> Any:
    """A capability whose class hooks are the given functions (both libraries find overridden hooks
    on the class)."""
    kind = type('Given', (lib.AbstractCapability,), {hook: staticmethod(f) for hook, f in hooks.items()})
    return kind()


async def static_choice(name: str, case: str) -> Any:
    lib = _names(name)
    answered: list[str] = []
    agent_model = labelled(lib, 'agent', answered)
    first = capability(lib, get_model=lambda: labelled(lib, 'first', answered))
    last = capability(lib, get_model=lambda: labelled(lib, 'last', answered))
    options: dict[str, Any] = {}
    if case == 'run model wins':
        options['model'] = labelled(lib, 'run', answered)
    agent = lib.Agent(agent_model, capabilities=[first, last] if case != 'none chooses' else [])
    result = await agent.run('go', **options)
    return [answered, result.output, [m.model_name for m in result.all_messages() if m.kind == 'response']]


@pytest.mark.parametrize('case', ['run model wins', 'the last capability wins', 'none chooses'])
def test_a_static_model_from_a_capability(case: str) -> None:
    ref, ours = (asyncio.run(static_choice(name, case)) for name in LIBS)
    assert ours == ref


async def selected_per_step(name: str, with_agent_model: bool) -> Any:
    lib = _names(name)
    answered: list[str] = []
    told: list[Any] = []
    models = {'odd': labelled(lib, 'odd', answered, calls=2), 'even': labelled(lib, 'even', answered, calls=2)}

    async def select(ctx: Any) -> Any:
        told.append((ctx.run_step, getattr(ctx.model, 'model_name', None), ctx.prompt, len(ctx.messages)))
        return models['odd' if ctx.run_step % 2 else 'even']

    agent_model = labelled(lib, 'agent', answered) if with_agent_model else None
    agent = lib.Agent(agent_model, tools=[shout], capabilities=[capability(lib, get_model=lambda: select)])
    result = await agent.run('go')
    return [told, answered, result.output]


@pytest.mark.parametrize('with_agent_model', [True, False], ids=['agent model', 'no agent model'])
def test_a_selector_chooses_before_each_request(with_agent_model: bool) -> None:
    ref, ours = (asyncio.run(selected_per_step(name, with_agent_model)) for name in LIBS)
    assert ours == ref
    assert [t[0] for t in ours[0]] == [1, 2, 3]


async def resolved(name: str, case: str) -> Any:
    lib = _names(name)
    answered: list[str] = []
    asked: list[Any] = []

    def resolver(label: str, answers: bool) -> Any:
        async def resolve_model_id(ctx: Any, *, model_id: str) -> Any:
            asked.append((label, model_id, ctx.deps, ctx.agent is agent))
            return labelled(lib, f'{label}:{model_id}', answered) if answers else None

        return resolve_model_id

    capabilities = [
        capability(lib, resolve_model_id=resolver('declines', False)),
        capability(lib, resolve_model_id=resolver('answers', case != 'the first two decline')),
        capability(lib, resolve_model_id=resolver('never asked', True)),
    ]
    if case == 'a capability names the model':
        capabilities.append(capability(lib, get_model=lambda: 'custom:from-capability'))
    agent = lib.Agent(None, capabilities=capabilities, deps_type=str)
    try:
        result = await agent.run('go', model='zz:x' if case != 'a capability names the model' else None, deps='D')
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return [asked, type(error).__name__, str(error)]
    return [asked, answered, result.output]


@pytest.mark.parametrize('case', ['the first answer wins', 'a capability names the model', 'the first two decline'])
def test_a_model_name_is_resolved_by_the_capabilities(case: str) -> None:
    ref, ours = (asyncio.run(resolved(name, case)) for name in LIBS)
    assert ours == ref
    if case != 'the first two decline':
        assert all(label != 'never asked' for label, *_ in ours[0])


async def wrapped_model(name: str) -> Any:
    lib = _names(name)
    answered: list[str] = []
    log: list[Any] = []

    class Noting(lib.WrapperModel):  # type: ignore[name-defined, misc]
        async def request(self, messages: list[Any], model_settings: Any, params: Any) -> Any:
            log.append(('request', self.model_name, len(messages)))
            return await super().request(messages, model_settings, params)

    def wrap(model: Any) -> Any:
        log.append(('wrap', model.model_name))
        return Noting(model)

    agent = lib.Agent(
        labelled(lib, 'inner', answered, calls=1),
        tools=[shout],
        capabilities=[capability(lib, get_wrapper_model=wrap)],
    )
    result = await agent.run('go')
    return [log, answered, result.output, [m.model_name for m in result.all_messages() if m.kind == 'response']]


def test_a_wrapper_model_serves_each_request() -> None:
    ref, ours = (asyncio.run(wrapped_model(name)) for name in LIBS)
    assert ours == ref
    assert ('request', 'inner', 1) in ours[0]


def unknown_name(name: str) -> list[Any]:
    lib = _names(name)

    async def declines(ctx: Any, *, model_id: str) -> Any:
        return None

    agent = lib.Agent(None, capabilities=[capability(lib, resolve_model_id=declines)])
    try:
        agent.run_sync('go', model='zz:x')
    except lib.UserError as error:
        return [str(error).split('. ')[0].rstrip('.')]
    return ['ran']


def test_a_name_no_capability_resolves_is_an_unknown_model() -> None:
    """A `UserError` in both (ours is its subclass `UnknownModel`, whose message goes on to say
    which names are known)."""
    ref, ours = (unknown_name(name) for name in LIBS)
    assert ours == ref == ['Unknown model: zz:x']
