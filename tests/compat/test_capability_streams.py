"""What capabilities hear and change of a run's events and tools, as pydantic-ai 2.62 runs them,
one script body on both libraries: `on_event` (overridden, and methods marked `@on_event`),
`wrap_run_event_stream` (what each way of consuming a run sees), and `get_wrapper_toolset`."""

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library_with

LIBS = ('ref', 'ours')


def _names(name: str) -> SimpleNamespace:
    return library_with(
        name,
        capabilities=('PrepareTools', 'on_event'),
        messages=('FunctionToolCallEvent', 'FunctionToolResultEvent', 'PartDeltaEvent', 'PartStartEvent'),
        toolsets=('WrapperToolset',),
    )


def describe(event: Any) -> tuple[str, ...]:
    """An event as both libraries can be compared on: its kind and what it is about."""
    about = getattr(event, 'part', None) or getattr(event, 'delta', None)
    tool = getattr(event, 'tool_name', None) or getattr(getattr(event, 'part', None), 'tool_name', None)
    return (event.event_kind, type(about).__name__ if about is not None else '', tool or '')


def shout(word: str) -> str:
    return word.upper()


def whisper(word: str) -> str:
    return word.lower()


async def heard(name: str, how: str) -> Any:
    lib = _names(name)
    log: list[Any] = []
    if how == 'overridden':

        class Listening(lib.AbstractCapability):  # type: ignore[name-defined, misc]
            async def on_event(self, ctx: Any, *, event: Any) -> None:
                log.append((ctx.run_step, *describe(event)))

    else:

        class Listening(lib.AbstractCapability):  # type: ignore[name-defined, misc, no-redef]
            @lib.on_event(lib.PartStartEvent, lib.FunctionToolResultEvent)
            async def starts_and_results(self, ctx: Any, event: Any) -> None:
                log.append(('filtered', *describe(event)))

            @lib.on_event
            async def everything(self, ctx: Any, event: Any) -> None:
                log.append(('all', describe(event)[0]))

    agent = lib.Agent(lib.TestModel(), tools=[shout], capabilities=[Listening()])
    result = await agent.run('go')  # no handler: the capability alone makes the run stream
    return [log, result.output]


@pytest.mark.parametrize('how', ['overridden', 'marked methods'])
def test_a_capability_hears_every_event_of_a_plain_run(how: str) -> None:
    ref, ours = (asyncio.run(heard(name, how)) for name in LIBS)
    assert ours == ref
    assert len(ours[0]) > 3


def _dropping(lib: SimpleNamespace) -> Any:
    class Dropping(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def wrap_run_event_stream(self, ctx: Any, *, stream: Any) -> Any:
            async for event in stream:
                if not isinstance(event, lib.PartDeltaEvent):
                    yield event

    return Dropping()


async def consumed(name: str, way: str) -> Any:
    lib = _names(name)
    agent = lib.Agent(lib.TestModel(), tools=[shout], capabilities=[_dropping(lib)])
    seen: list[Any] = []
    if way == 'handler':

        async def handler(ctx: Any, events: Any) -> None:
            seen.extend([describe(e) async for e in events])

        output = (await agent.run('go', event_stream_handler=handler)).output
    elif way == 'run_stream_events':
        output = None
        async with agent.run_stream_events('go') as events:
            async for event in events:
                seen.append(describe(event))
    else:
        async with agent.iter('go') as run:
            async for node in run:
                if lib.Agent.is_model_request_node(node) or lib.Agent.is_call_tools_node(node):
                    async with node.stream(run.ctx) as events:
                        seen.extend([describe(e) async for e in events])
        output = run.result.output if run.result else None
    return [seen, output]


@pytest.mark.parametrize('way', ['handler', 'run_stream_events', 'node streams'])
def test_a_wrapped_event_stream_is_what_each_consumer_sees(way: str) -> None:
    ref, ours = (asyncio.run(consumed(name, way)) for name in LIBS)
    assert ours == ref
    assert not any(kind == 'part_delta' for kind, *_ in ours[0])


async def wrapped_tools(name: str) -> Any:
    lib = _names(name)
    log: list[Any] = []

    class Noting(lib.WrapperToolset):  # type: ignore[name-defined, misc]
        async def get_tools(self, ctx: Any) -> Any:
            tools = await super().get_tools(ctx)
            log.append(('get_tools', ctx.run_step, sorted(tools)))
            return tools

        async def call_tool(self, name: str, tool_args: Any, ctx: Any, tool: Any) -> Any:
            log.append(('call_tool', name, dict(tool_args)))
            return f'wrapped {await super().call_tool(name, tool_args, ctx, tool)}'

    class Wrapping(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        def get_wrapper_toolset(self, toolset: Any) -> Any:
            return Noting(toolset)

    def no_whisper(ctx: Any, defs: list[Any]) -> list[Any]:
        return [d for d in defs if d.name != 'whisper']

    capabilities = [Wrapping(), lib.PrepareTools(no_whisper)]
    agent = lib.Agent(lib.TestModel(), tools=[shout, whisper], capabilities=capabilities)
    result = await agent.run('go')
    answers = [p.content for m in result.all_messages() for p in m.parts if p.part_kind == 'tool-return']
    return [log, answers, result.output]


def test_a_toolset_wrapper_sees_the_prepared_tools_and_every_call() -> None:
    ref, ours = (asyncio.run(wrapped_tools(name)) for name in LIBS)
    assert ours == ref
    assert ours[1] == ['wrapped A']


async def result_events(name: str) -> Any:
    lib = _names(name)

    def noted(word: str) -> Any:
        return lib.ToolReturn(return_value=word.upper(), content=f'a note on {word}')

    seen: list[Any] = []

    async def handler(ctx: Any, events: Any) -> None:
        async for event in events:
            if isinstance(event, (lib.FunctionToolCallEvent, lib.FunctionToolResultEvent)):
                seen.append((event.event_kind, event.tool_call_id, getattr(event, 'content', None)))
                if isinstance(event, lib.FunctionToolResultEvent):
                    seen.append((event.part.part_kind, event.part.content))

    await lib.Agent(lib.TestModel(), tools=[noted]).run('go', event_stream_handler=handler)
    return seen


def test_a_result_event_carries_the_part_and_the_added_content() -> None:
    ref, ours = (asyncio.run(result_events(name)) for name in LIBS)
    assert ours == ref
    assert ('tool-return', 'A') in ours
