"""`Capability` (instructions, tools and toolsets bundled without subclassing) as pydantic-ai 2.62
builds it, one script body on both libraries: what the model is offered and told, what the tools
answer, and the history."""

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library

LIBS = ('ref', 'ours')


def _names(name: str) -> SimpleNamespace:
    lib = library(name)
    if name == 'ref':
        from pydantic_ai.capabilities import Capability
        from pydantic_ai.exceptions import UserError
        from pydantic_ai.toolsets import FunctionToolset
    else:
        from threadline.capabilities import Capability
        from threadline.exceptions import UserError
        from threadline.toolsets import FunctionToolset
    return SimpleNamespace(**vars(lib), Capability=Capability, FunctionToolset=FunctionToolset, UserError=UserError)


def calling_model(lib: SimpleNamespace, seen: list[Any]) -> Any:
    def model(messages: list[Any], info: Any) -> Any:
        seen.append((info.instructions, sorted(t.name for t in info.function_tools)))
        if len(seen) == 1:
            calls = [lib.ToolCallPart(n, {'word': 'hi'} if n != 'count' else {}, f'c-{n}') for n in seen[0][1]]
            return lib.ModelResponse(parts=calls)
        return lib.ModelResponse(parts=[lib.TextPart('done')])

    return lib.FunctionModel(model)


async def bundled(name: str, shape: str) -> Any:
    lib = _names(name)
    seen: list[Any] = []

    def shout(word: str) -> str:
        return word.upper()

    extra = lib.FunctionToolset()

    @extra.tool_plain
    def whisper(word: str) -> str:
        return word.lower()

    if shape == 'all':
        cap = lib.Capability(
            instructions=['Be brief.', lambda ctx: f'deps are {ctx.deps}'], tools=[shout], toolsets=[extra]
        )
    elif shape == 'prefixed-toolset':
        cap = lib.Capability(toolsets=[extra.prefixed('quiet')], tools=[shout])
    elif shape == 'tools-only':
        cap = lib.Capability(tools=[shout])
    else:
        cap = lib.Capability(instructions='Static only.')

    @cap.tool
    def count(ctx: lib.RunContext[str]) -> int:  # type: ignore[name-defined]
        return ctx.run_step

    @cap.instructions
    async def late(ctx: lib.RunContext[str]) -> str:  # type: ignore[name-defined]
        return 'added by the decorator'

    agent = lib.Agent(calling_model(lib, seen), instructions='Agent first.', capabilities=[cap], deps_type=str)
    result = await agent.run('go', deps='D')
    answers = sorted(
        (p.tool_name, p.content) for m in result.all_messages() for p in m.parts if p.part_kind == 'tool-return'
    )
    return [seen, answers, result.output, [m.instructions for m in result.all_messages() if m.kind == 'request']]


@pytest.mark.parametrize('shape', ['all', 'prefixed-toolset', 'tools-only', 'instructions-only'])
def test_a_capability_bundle_runs_as_in_the_reference(shape: str) -> None:
    ref, ours = (asyncio.run(bundled(name, shape)) for name in LIBS)
    assert ours == ref
    assert 'added by the decorator' in ours[0][0][0]
    if shape == 'prefixed-toolset':
        assert ('quiet_whisper', 'hi') in ours[1]  # asked of the toolset at each step


def test_the_instructions_decorator_takes_parentheses() -> None:
    for name in LIBS:
        lib = _names(name)
        cap = lib.Capability()

        @cap.instructions()
        def text() -> str:
            return 'from parentheses'

        seen: list[Any] = []
        lib.Agent(calling_model(lib, seen), capabilities=[cap]).run_sync('x')
        assert seen[0][0] == 'from parentheses', name


def offered_by_decorator_options(name: str) -> list[Any]:
    lib = _names(name)
    cap = lib.Capability()

    @cap.tool_plain(name='renamed', retries=3, description='Says yes.')
    def original() -> str:
        return 'yes'

    tools: list[Any] = []

    def model(messages: list[Any], info: Any) -> Any:
        tools.extend((t.name, t.description) for t in info.function_tools)
        return lib.ModelResponse(parts=[lib.TextPart('ok')])

    lib.Agent(lib.FunctionModel(model), capabilities=[cap]).run_sync('x')
    return tools


def test_tool_options_pass_through() -> None:
    ref, ours = (offered_by_decorator_options(name) for name in LIBS)
    assert ours == ref == [('renamed', 'Says yes.')]


async def subclassed(name: str) -> Any:
    lib = _names(name)
    seen: list[Any] = []
    tools = lib.FunctionToolset()

    @tools.tool_plain
    def echo(word: str) -> str:
        return word

    class Own(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        def get_toolset(self) -> Any:
            return tools.prefixed('own')

        def get_instructions(self) -> Any:
            return [lambda ctx: f'step {ctx.run_step}', 'and a string']

    result = await lib.Agent(calling_model(lib, seen), capabilities=[Own()]).run('go')
    return [seen, result.output]


def test_a_subclass_may_give_any_toolset_and_instruction_functions() -> None:
    ref, ours = (asyncio.run(subclassed(name)) for name in LIBS)
    assert ours == ref
    assert ours[0][0] == ('and a string\n\nstep 1', ['own_echo'])


def instruction_order(name: str) -> str:
    lib = _names(name)
    seen: list[Any] = []

    def model(messages: list[Any], info: Any) -> Any:
        seen.append(info.instructions)
        return lib.ModelResponse(parts=[lib.TextPart('ok')])

    agent = lib.Agent(
        lib.FunctionModel(model),
        instructions=[lambda ctx: 'agent fn', 'agent text'],
        capabilities=[lib.Capability(instructions=[lambda: 'capability fn', 'capability text'])],
    )

    @agent.instructions
    def decorated() -> str:
        return 'agent decorator'

    agent.run_sync(
        'x',
        instructions=[lambda: 'run fn', 'run text'],
        capabilities=[lib.Capability(instructions=['run capability text', lambda: 'run capability fn'])],
    )
    return str(seen[0])


def test_static_instructions_lead_then_functions_in_source_order() -> None:
    ref, ours = (instruction_order(name) for name in LIBS)
    assert ours == ref
    assert ours.split('\n\n')[:2] == ['agent text', 'capability text']


def _more(name: str) -> SimpleNamespace:
    names = _names(name)
    if name == 'ref':
        from pydantic_ai.capabilities import DynamicCapability, WrapperCapability
    else:
        from threadline.capabilities import DynamicCapability, WrapperCapability
    return SimpleNamespace(**vars(names), DynamicCapability=DynamicCapability, WrapperCapability=WrapperCapability)


async def wrapped_run(name: str) -> Any:
    lib = _more(name)
    log: list[Any] = []

    class Counting(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def after_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, result: Any) -> Any:
            log.append(('inner after_tool_execute', call.tool_name, result))
            return result

        def get_instructions(self) -> Any:
            return 'inner instructions'

    class Loud(lib.WrapperCapability):  # type: ignore[name-defined, misc]
        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            log.append(('wrapper before_model_request', ctx.run_step))
            return await super().before_model_request(ctx, request_context)

    def shout(word: str) -> str:
        return word.upper()

    seen: list[Any] = []
    agent = lib.Agent(calling_model(lib, seen), tools=[shout], capabilities=[Loud(Counting())])
    result = await agent.run('go')
    return [log, seen, result.output]


def test_a_wrapper_hands_every_hook_to_what_it_wraps() -> None:
    ref, ours = (asyncio.run(wrapped_run(name)) for name in LIBS)
    assert ours == ref
    assert ('inner after_tool_execute', 'shout', 'HI') in ours[0]


async def dynamic_run(name: str, direct: bool) -> Any:
    lib = _more(name)
    made: list[str] = []

    def per_run(ctx: Any) -> Any:
        made.append(ctx.deps)
        if ctx.deps == 'none':
            return None
        return lib.Capability(instructions=f'for {ctx.deps}', tools=[lambda: f'tool of {ctx.deps}'])

    seen: list[Any] = []
    capability = per_run if direct else lib.DynamicCapability(per_run)
    agent = lib.Agent(calling_model(lib, seen), deps_type=str, capabilities=[capability])
    outputs = [(await agent.run('go', deps=deps)).output for deps in ('alice', 'none')]
    return [made, seen, outputs]


@pytest.mark.parametrize('direct', [False, True], ids=['DynamicCapability', 'a plain function'])
def test_a_dynamic_capability_is_made_for_each_run(direct: bool) -> None:
    ref, ours = (asyncio.run(dynamic_run(name, direct)) for name in LIBS)
    assert ours == ref
    assert ours[0] == ['alice', 'none'] and ours[1][0][0] == 'for alice'
