"""The per-step tool hooks as pydantic-ai 2.62 runs them, one script body on both libraries:
`prepare_tools` / `prepare_output_tools` (as hooks and as `PrepareTools` / `PrepareOutputTools`),
and `Toolset`. What the model is offered each step, what a hidden tool answers when it is called
anyway, the retry budget the hooks see, and the order they run in."""

import asyncio
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library_with

LIBS = ('ref', 'ours')


def _names(name: str) -> SimpleNamespace:
    return library_with(
        name,
        capabilities=('PrepareOutputTools', 'PrepareTools', 'Toolset'),
        exceptions=('UserError',),
        toolsets=('FunctionToolset',),
    )


def offered(info: Any) -> list[Any]:
    return [
        sorted((t.name, t.description) for t in info.function_tools),
        sorted(t.name for t in info.output_tools),
    ]


def returns(messages: list[Any]) -> list[Any]:
    return [
        (p.part_kind, p.tool_name, str(p.content))
        for m in messages
        for p in m.parts
        if p.part_kind in ('tool-return', 'retry-prompt')
    ]


def scripted(lib: SimpleNamespace, steps: list[list[Any]], seen: list[Any]) -> Any:
    """A model that sends `steps[i]` (tool calls as (name, args)) on request i and records what
    it was offered."""

    def model(messages: list[Any], info: Any) -> Any:
        seen.append(offered(info))
        calls = steps[min(len(seen), len(steps)) - 1]
        if not calls:
            return lib.ModelResponse(parts=[lib.TextPart('done')])
        return lib.ModelResponse(parts=[lib.ToolCallPart(n, a, f'c{len(seen)}-{n}') for n, a in calls])

    return lib.FunctionModel(model)


def shout(word: str) -> str:
    """Shouts the word."""
    return word.upper()


def secret() -> str:
    """Must stay hidden."""
    return 'leaked'


async def hidden_tool_called(name: str, how: str) -> Any:
    lib = _names(name)
    log: list[Any] = []

    def hide(ctx: Any, defs: list[Any]) -> list[Any]:
        log.append(('prepare', ctx.run_step, ctx.retry, ctx.max_retries, sorted(d.name for d in defs)))
        return [replace(d, description='(prepared) ' + (d.description or '')) for d in defs if d.name != 'secret']

    class Hiding(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def prepare_tools(self, ctx: Any, tool_defs: list[Any]) -> list[Any]:
            return hide(ctx, tool_defs)

    capability = lib.PrepareTools(hide) if how == 'PrepareTools' else Hiding()
    seen: list[Any] = []
    steps = [[('secret', {}), ('shout', {'word': 'hi'})], []]
    agent = lib.Agent(scripted(lib, steps, seen), tools=[shout, secret], capabilities=[capability], retries=2)
    result = await agent.run('go')
    return [log, seen, returns(result.all_messages()), result.output]


@pytest.mark.parametrize('how', ['PrepareTools', 'a prepare_tools hook'])
def test_a_tool_prepared_away_is_not_offered_and_cannot_be_called(how: str) -> None:
    ref, ours = (asyncio.run(hidden_tool_called(name, how)) for name in LIBS)
    assert ours == ref
    assert all('secret' not in str(step[0]) for step in ours[1])
    assert not any('leaked' in answer[2] for answer in ours[2])


async def hidden_output_tool(name: str, how: str) -> Any:
    lib = _names(name)
    log: list[Any] = []

    def only_a(ctx: Any, defs: list[Any]) -> list[Any]:
        log.append(('output', ctx.run_step, ctx.retry, ctx.max_retries, sorted(d.name for d in defs)))
        return [d for d in defs if d.name != 'final_b']

    def tools_seen(ctx: Any, defs: list[Any]) -> list[Any]:
        log.append(('function', ctx.run_step, ctx.retry, ctx.max_retries, sorted(d.name for d in defs)))
        return defs

    if how == 'classes':
        capabilities = [lib.PrepareTools(tools_seen), lib.PrepareOutputTools(only_a)]
    else:

        class Both(lib.AbstractCapability):  # type: ignore[name-defined, misc]
            async def prepare_tools(self, ctx: Any, tool_defs: list[Any]) -> list[Any]:
                return tools_seen(ctx, tool_defs)

            async def prepare_output_tools(self, ctx: Any, tool_defs: list[Any]) -> list[Any]:
                return only_a(ctx, tool_defs)

        capabilities = [Both()]
    seen: list[Any] = []
    steps = [[('final_b', {'response': 'B'})], [('final_a', {'response': 'A'})]]
    output = [lib.ToolOutput(str, name='final_a'), lib.ToolOutput(str, name='final_b')]
    agent = lib.Agent(scripted(lib, steps, seen), tools=[shout], output_type=output, capabilities=capabilities)
    result = await agent.run('go')
    return [log, seen, returns(result.all_messages()), result.output]


@pytest.mark.parametrize('how', ['classes', 'hooks'])
def test_output_tools_are_prepared_first_with_the_output_budget(how: str) -> None:
    ref, ours = (asyncio.run(hidden_output_tool(name, how)) for name in LIBS)
    assert ours == ref
    assert ours[0][0][0] == 'output' and ours[3] == 'A'
    assert ours[1][0][1] == ['final_a']


async def dropped_by_step(name: str) -> Any:
    lib = _names(name)

    async def first_step_only(ctx: Any, defs: list[Any]) -> list[Any]:
        return defs if ctx.run_step == 1 else []

    seen: list[Any] = []
    steps = [[('shout', {'word': 'a'})], [('shout', {'word': 'b'})], []]
    agent = lib.Agent(scripted(lib, steps, seen), tools=[shout], capabilities=[lib.PrepareTools(first_step_only)])
    result = await agent.run('go')
    return [seen, returns(result.all_messages()), result.output]


def test_an_async_prepare_function_decides_per_step() -> None:
    ref, ours = (asyncio.run(dropped_by_step(name)) for name in LIBS)
    assert ours == ref
    assert ours[0][1][0] == []


def refused_result(name: str, answer: str) -> str:
    lib = _names(name)

    def bad(ctx: Any, defs: list[Any]) -> Any:
        if answer == 'None':
            return None
        return [replace(d, name='renamed') for d in defs]

    agent = lib.Agent(scripted(lib, [[]], []), tools=[shout], capabilities=[lib.PrepareTools(bad)])
    try:
        agent.run_sync('go')
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return type(error).__name__
    return 'ran'


@pytest.mark.parametrize('answer', ['None', 'a renamed tool'])
def test_a_prepare_function_may_not_return_none_or_rename(answer: str) -> None:
    ref, ours = (refused_result(name, answer) for name in LIBS)
    assert ours == ref == 'UserError'


async def toolset_capability(name: str) -> Any:
    lib = _names(name)
    tools = lib.FunctionToolset()

    @tools.tool
    def step(ctx: lib.RunContext[str]) -> str:  # type: ignore[name-defined]
        """The step it was called at."""
        return f'{ctx.deps} at {ctx.run_step}'

    seen: list[Any] = []
    steps = [[('step', {}), ('quiet_step', {})], []]
    agent = lib.Agent(
        scripted(lib, steps, seen),
        deps_type=str,
        capabilities=[lib.Toolset(tools), lib.Toolset(tools.prefixed('quiet'))],
    )
    result = await agent.run('go', deps='D')
    return [seen, returns(result.all_messages()), result.output]


def test_a_toolset_capability_adds_its_tools() -> None:
    ref, ours = (asyncio.run(toolset_capability(name)) for name in LIBS)
    assert ours == ref
    assert ('tool-return', 'quiet_step', 'D at 1') in ours[1]
