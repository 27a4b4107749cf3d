"""Agent and run options as pydantic-ai 2.62 has them, one script body on both libraries:
`metadata=` (agent and run, dicts and functions), name inference, per-run `output_type=`,
per-request `model_settings` (functions, and capabilities' `get_model_settings`), and
`defer_model_check=`."""

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library_with

LIBS = ('ref', 'ours')


def _names(name: str) -> SimpleNamespace:
    return library_with(name, exceptions=('UserError',))


def one_call_model(lib: SimpleNamespace, seen: list[Any]) -> Any:
    """Calls `t` once, then answers; notes each request's settings."""

    def model(messages: list[Any], info: Any) -> Any:
        seen.append(dict(info.model_settings or {}))
        if len(seen) == 1:
            return lib.ModelResponse(parts=[lib.ToolCallPart('t', {}, 'c1')])
        return lib.ModelResponse(parts=[lib.TextPart('ok')])

    return lib.FunctionModel(model)


async def metadata(name: str, case: str) -> Any:
    lib = _names(name)
    told: list[Any] = []
    agent_meta: Any = {'team': 'a', 'shared': 'agent'} if case != 'run only' else None
    if case == 'functions':
        agent_meta = lambda ctx: {'agent_step': ctx.run_step}  # noqa: E731
    agent = lib.Agent(one_call_model(lib, []), metadata=agent_meta)

    @agent.tool
    def t(ctx: lib.RunContext[None]) -> str:  # type: ignore[name-defined]
        told.append(dict(ctx.metadata or {}))
        return 'x'

    options: dict[str, Any] = {}
    if case in ('merged', 'run only'):
        options['metadata'] = {'shared': 'run', 'run': 1}
    if case == 'functions':
        options['metadata'] = lambda ctx: {'run_step': ctx.run_step}
    result = await agent.run('go', **options)
    return [told, result.metadata]


@pytest.mark.parametrize('case', ['agent only', 'merged', 'run only', 'functions', 'none'])
def test_run_metadata_as_in_the_reference(case: str) -> None:
    if case == 'none':
        results = [asyncio.run(_no_metadata(name)) for name in LIBS]
        assert results[0] == results[1] == None  # noqa: E711
        return
    ref, ours = (asyncio.run(metadata(name, case)) for name in LIBS)
    assert ours == ref


async def _no_metadata(name: str) -> Any:
    lib = _names(name)
    return (await lib.Agent(lib.TestModel()).run('go')).metadata


def named(name: str, way: str) -> Any:
    lib = _names(name)
    if way == 'run_sync':
        my_assistant = lib.Agent(lib.TestModel())
        my_assistant.run_sync('go')
        found = my_assistant.name
    elif way == 'run':

        async def main() -> Any:
            my_assistant = lib.Agent(lib.TestModel())
            await my_assistant.run('go')
            return my_assistant.name

        found = asyncio.run(main())
    else:

        async def drive() -> Any:
            my_assistant = lib.Agent(lib.TestModel())
            async with my_assistant.iter('go') as run:
                async for _ in run:
                    pass
            return my_assistant.name

        found = asyncio.run(drive())
    given = lib.Agent(lib.TestModel(), name='given')
    given.run_sync('go')
    return [found, given.name]


@pytest.mark.parametrize('way', ['run_sync', 'run'])
def test_an_agent_without_a_name_takes_its_variables(way: str) -> None:
    ref, ours = (named(name, way) for name in LIBS)
    assert ours == ref == ['my_assistant', 'given']


def test_iter_infers_the_name_too() -> None:
    """A difference kept on purpose: pydantic-ai 2.62's `iter` looks for the name in its context
    manager's frame and finds none; Threadline looks in the caller's, as `run` does."""
    assert named('ref', 'iter') == [None, 'given']
    assert named('ours', 'iter') == ['my_assistant', 'given']


async def per_run_output(name: str) -> Any:
    lib = _names(name)
    agent = lib.Agent(lib.TestModel(), output_type=str)
    as_int = await agent.run('go', output_type=int)
    as_default = await agent.run('go')
    return [as_int.output, type(as_int.output).__name__, as_default.output]


def test_a_run_may_ask_for_another_output_type() -> None:
    ref, ours = (asyncio.run(per_run_output(name)) for name in LIBS)
    assert ours == ref


async def settings(name: str, run_settings: str) -> Any:
    lib = _names(name)
    seen: list[Any] = []

    class Tuning(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        def get_model_settings(self) -> Any:
            return lambda ctx: {'top_p': ctx.run_step / 10, 'temperature': 0.5, 'seed': 1}

    agent = lib.Agent(
        one_call_model(lib, seen),
        model_settings=lambda ctx: {'temperature': ctx.run_step / 100, 'max_tokens': 7},
        capabilities=[Tuning()],
    )

    @agent.tool_plain
    def t() -> str:
        return 'x'

    given: Any = {'seed': 9} if run_settings == 'a dict' else (lambda ctx: {'seed': ctx.run_step * 100})
    await agent.run('go', model_settings=given)
    static = lib.Agent(one_call_model(lib, seen), model_settings={'max_tokens': 3})
    static.tool_plain(t)
    await static.run('go', model_settings={'temperature': 0.2})
    return seen


@pytest.mark.parametrize('run_settings', ['a dict', 'a function'])
def test_model_settings_are_layered_per_request(run_settings: str) -> None:
    ref, ours = (asyncio.run(settings(name, run_settings)) for name in LIBS)
    assert ours == ref
    assert ours[0]['top_p'] == 0.1 and ours[1]['top_p'] == 0.2


def deferred_check(name: str) -> Any:
    lib = _names(name)
    agent = lib.Agent('zz:unknown', defer_model_check=True)
    try:
        agent.run_sync('go')
    except lib.UserError as error:
        return str(error).split('. ')[0]
    return 'ran'


def test_a_deferred_model_check_fails_at_the_run() -> None:
    ref, ours = (deferred_check(name) for name in LIBS)
    assert ours == ref == 'Unknown model: zz:unknown'


async def budgets(name: str, agent_retries: Any, run_retries: Any) -> Any:
    lib = _names(name)
    counts = {'tool': 0, 'output': 0}

    def model(messages: list[Any], info: Any) -> Any:
        last = messages[-1].parts[-1]
        if len(messages) == 1 or (getattr(last, 'tool_name', None) == 'flaky' and last.content != 'ok'):
            return lib.ModelResponse(parts=[lib.ToolCallPart('flaky', {}, f'c{len(messages)}')])
        return lib.ModelResponse(parts=[lib.TextPart('text')])

    agent = lib.Agent(lib.FunctionModel(model), retries=agent_retries)

    @agent.tool_plain
    def flaky() -> str:
        counts['tool'] += 1
        if counts['tool'] <= 2:
            raise lib.ModelRetry('again')
        return 'ok'

    @agent.output_validator
    def check(output: str) -> str:
        counts['output'] += 1
        raise lib.ModelRetry('not yet')

    try:
        await agent.run('go', **({} if run_retries is None else {'retries': run_retries}))
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return [type(error).__name__, str(error).split('. ')[0], counts]  # ours then says what to do
    return ['ran', counts]


@pytest.mark.parametrize(
    ('agent_retries', 'run_retries'),
    [
        ({'tools': 2, 'output': 3}, None),
        ({'tools': 1}, None),
        (3, {'output': 1}),
        ({'tools': 2, 'output': 0}, 2),
    ],
)
def test_retry_budgets_by_kind(agent_retries: Any, run_retries: Any) -> None:
    ref, ours = (asyncio.run(budgets(name, agent_retries, run_retries)) for name in LIBS)
    assert ours == ref
