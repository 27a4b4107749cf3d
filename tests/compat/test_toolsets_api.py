"""The toolset API as pydantic-ai 2.62 has it, one script body on both libraries:
`FunctionToolset`'s options and instructions, `DynamicToolset` (`@agent.toolset`, a function
where a toolset goes, `per_run_step`), and `for_run` / `for_run_step`."""

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library_with

LIBS = ('ref', 'ours')


def _names(name: str) -> SimpleNamespace:
    return library_with(
        name,
        capabilities=('Capability',),
        toolsets=('AbstractToolset', 'DynamicToolset', 'FunctionToolset', 'WrapperToolset'),
    )


def recording(lib: SimpleNamespace, seen: list[Any], calls: list[str] | None = None) -> Any:
    """A model that notes each request's instructions and tool definitions, calls `calls` on its
    first request, then answers."""

    def model(messages: list[Any], info: Any) -> Any:
        seen.append(
            (
                info.instructions,
                [
                    (t.name, t.description, t.strict, t.sequential, t.metadata, t.kind, t.defer_loading)
                    for t in sorted(info.function_tools, key=lambda t: t.name)
                ],
            )
        )
        if len(seen) == 1 and calls:
            return lib.ModelResponse(parts=[lib.ToolCallPart(n, {}, f'c-{n}') for n in calls])
        return lib.ModelResponse(parts=[lib.TextPart('done')])

    return lib.FunctionModel(model)


def returns(result: Any) -> list[Any]:
    return sorted(
        (p.tool_name, str(p.content)) for m in result.all_messages() for p in m.parts if p.part_kind == 'tool-return'
    )


async def toolset_options(name: str) -> Any:
    lib = _names(name)
    tools = lib.FunctionToolset(
        max_retries=3, strict=True, sequential=True, metadata={'team': 'a', 'tier': 1}, id='opts'
    )

    @tools.tool_plain
    def plain() -> str:
        """Plain tool."""
        return 'p'

    @tools.tool_plain(name='renamed', description='Given.', metadata={'tier': 2}, sequential=False, strict=False)
    def original() -> str:
        return 'o'

    @tools.tool(retries=0)
    def with_ctx(ctx: lib.RunContext[None]) -> str:  # type: ignore[name-defined]
        """Reads the step."""
        return f'step {ctx.run_step}'

    def added() -> str:
        """Added by add_function."""
        return 'a'

    tools.add_function(added, name='added_fn')
    seen: list[Any] = []
    result = await lib.Agent(recording(lib, seen, ['plain', 'renamed', 'with_ctx', 'added_fn']), toolsets=[tools]).run(
        'go'
    )
    retries = {n: t.max_retries for n, t in tools.tools.items()}
    return [seen[0][1], returns(result), retries]


def test_function_toolset_options_are_defaults_for_its_tools() -> None:
    ref, ours = (asyncio.run(toolset_options(name)) for name in LIBS)
    assert ours == ref
    assert ('renamed', 'Given.', False, False, {'team': 'a', 'tier': 2}, 'function', False) in ours[0]


async def toolset_instructions(name: str) -> Any:
    lib = _names(name)
    seen: list[Any] = []

    def toolset(instructions: Any, tool_name: str, cls: Any = None) -> Any:
        made = (cls or lib.FunctionToolset)(instructions=instructions)
        made.add_function(lambda: 'x', name=tool_name)
        return made

    class Own(lib.FunctionToolset):  # type: ignore[name-defined, misc]
        async def get_instructions(self, ctx: Any) -> Any:
            return f'own at {ctx.run_step}'

    agent = lib.Agent(
        recording(lib, seen, ['t']),
        instructions=['agent', lambda ctx: 'agent fn'],
        toolsets=[toolset(['ts static', lambda ctx: f'ts fn {ctx.run_step}'], 't'), toolset(None, 'w', Own)],
        capabilities=[lib.Capability(instructions=['cap', lambda: 'cap fn'], toolsets=[toolset('cap ts', 'u')])],
    )
    await agent.run('go', instructions=['run', lambda: 'run fn'], toolsets=[toolset('run ts', 'v')])
    return [s[0] for s in seen]


def test_toolset_instructions_join_the_run_in_the_reference_order() -> None:
    ref, ours = (asyncio.run(toolset_instructions(name)) for name in LIBS)
    assert ours == ref
    assert 'ts fn 2' in ours[1]


async def dynamic(name: str, how: str) -> Any:
    lib = _names(name)
    log: list[Any] = []

    class Entered(lib.FunctionToolset):  # type: ignore[name-defined, misc]
        async def __aenter__(self) -> Any:
            log.append(('enter', sorted(self.tools)))
            return self

        async def __aexit__(self, *exc_info: Any) -> Any:
            log.append(('exit', sorted(self.tools)))
            return None

    def first(word: str = 'a') -> str:
        return f'first {word}'

    def second(word: str = 'b') -> str:
        return f'second {word}'

    made = {1: Entered([first], instructions='use first'), 2: Entered([second], instructions='use second')}

    def per_step(ctx: Any) -> Any:
        log.append(('built', ctx.run_step))
        return made.get(ctx.run_step)

    seen: list[Any] = []
    options: dict[str, Any] = {}
    if how == 'decorator':
        agent = lib.Agent(recording(lib, seen, ['first']))
        agent.toolset(per_step)
    elif how == 'decorator once per run':
        agent = lib.Agent(recording(lib, seen, ['first']))
        agent.toolset(per_run_step=False)(per_step)
    elif how == 'a function in toolsets=':
        agent = lib.Agent(recording(lib, seen, ['first']), toolsets=[per_step])
    elif how == 'a DynamicToolset in run(toolsets=)':  # pydantic-ai takes no bare function there
        agent = lib.Agent(recording(lib, seen, ['first']))
        options['toolsets'] = [lib.DynamicToolset(per_step)]
    elif how == 'a function in Capability(toolsets=)':
        agent = lib.Agent(recording(lib, seen, ['first']), capabilities=[lib.Capability(toolsets=[per_step])])
    else:
        agent = lib.Agent(recording(lib, seen, ['first']), toolsets=[lib.DynamicToolset(per_step, per_run_step=False)])
    result = await agent.run('go', **options)
    return [log, [(s[0], [t[0] for t in s[1]]) for s in seen], returns(result)]


HOWS = [
    'decorator',
    'decorator once per run',
    'a function in toolsets=',
    'a DynamicToolset in run(toolsets=)',
    'a function in Capability(toolsets=)',
    'DynamicToolset once per run',
]


@pytest.mark.parametrize('how', HOWS)
def test_a_dynamic_toolset_is_built_per_step_or_per_run(how: str) -> None:
    ref, ours = (asyncio.run(dynamic(name, how)) for name in LIBS)
    assert ours == ref
    assert ('tool-return' not in str(ours[2])) and ours[2][0][0] == 'first'


async def per_run_instances(name: str) -> Any:
    lib = _names(name)
    made: list[Any] = []

    class Counting(lib.WrapperToolset):  # type: ignore[name-defined, misc]
        def __init__(self, wrapped: Any, run: int = 0) -> None:
            super().__init__(wrapped)
            self.run, self.steps = run, []

        async def for_run(self, ctx: Any) -> Any:
            fresh = Counting(self.wrapped, run=len(made) + 1)
            made.append(fresh)
            return fresh

        async def for_run_step(self, ctx: Any) -> Any:
            self.steps.append(ctx.run_step)
            return self

        async def call_tool(self, name: str, tool_args: Any, ctx: Any, tool: Any) -> Any:
            return f'run {self.run}: ' + str(await super().call_tool(name, tool_args, ctx, tool))

    inner = lib.FunctionToolset()

    @inner.tool_plain
    def ping() -> str:
        return 'pong'

    shared = Counting(inner)
    agent = lib.Agent(recording(lib, [], ['ping']), toolsets=[shared])
    first = await agent.run('go')
    agent2 = lib.Agent(recording(lib, [], ['ping']), toolsets=[shared])
    second = await agent2.run('go')
    return [returns(first), returns(second), [(m.run, m.steps) for m in made], shared.steps]


def test_for_run_gives_each_run_its_own_toolset() -> None:
    ref, ours = (asyncio.run(per_run_instances(name)) for name in LIBS)
    assert ours == ref
    assert ours[0] == [('ping', 'run 1: pong')] and ours[3] == []
