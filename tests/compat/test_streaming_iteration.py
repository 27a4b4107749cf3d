"""Streaming and iteration as in pydantic-ai 2.62, one script body on both libraries: streaming
the nodes of a run driven by `iter()` with the context it exposes, and `run_stream_sync` read
without a `with` block."""

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library

LIBS = ('ref', 'ours')


async def nodes_streamed_with_the_run_context(lib: SimpleNamespace) -> Any:
    calls = 0

    async def stream(messages: list[Any], info: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            yield {0: lib.DeltaToolCall(name='t', json_args='{"x": 1}', tool_call_id='c1')}
        else:
            yield 'hel'
            yield 'lo'

    agent = lib.Agent(lib.FunctionModel(lambda m, i: None, stream_function=stream))

    @agent.tool_plain
    def t(x: int) -> str:
        return f'got {x}'

    events: list[Any] = []
    async with agent.iter('x') as run:
        async for node in run:
            if lib.Agent.is_model_request_node(node) or lib.Agent.is_call_tools_node(node):
                async with node.stream(run.ctx) as stream_of_node:
                    async for event in stream_of_node:
                        events.append([type(node).__name__, type(event).__name__])
    assert run.result is not None
    kinds = [[p.part_kind for p in m.parts] for m in run.result.all_messages()]
    return [events, run.result.output, calls, kinds]


def test_nodes_stream_with_the_context_iter_exposes() -> None:
    ref, ours = (asyncio.run(nodes_streamed_with_the_run_context(library(name))) for name in LIBS)
    assert ours == ref
    assert ours[1:3] == ['hello', 2]  # each node ran once: streaming it was running it


def read_without_with(lib: SimpleNamespace, read: str) -> Any:
    agent = lib.Agent(lib.TestModel(custom_output_text='hello there world'))
    result = agent.run_stream_sync('x')
    text = ''.join(result.stream_text(delta=True)) if read == 'stream_text' else result.get_output()
    return [text, result.get_output(), result.is_complete, [m.kind for m in result.all_messages()]]


@pytest.mark.parametrize('read', ['stream_text', 'get_output'])
def test_run_stream_sync_reads_without_a_with_block(read: str) -> None:
    ref, ours = (read_without_with(library(name), read) for name in LIBS)
    assert ours == ref
    assert ours[:3] == ['hello there world', 'hello there world', True]


def test_run_stream_sync_inside_a_running_loop_is_a_runtime_error() -> None:
    async def inside(lib: SimpleNamespace) -> str:
        try:
            lib.Agent(lib.TestModel()).run_stream_sync('x')  # refused when made, not when read
        except RuntimeError:
            return 'refused'
        return 'made'

    assert [asyncio.run(inside(library(name))) for name in LIBS] == ['refused', 'refused']


async def a_model_streamed_directly(lib: SimpleNamespace, parameters: Any) -> Any:
    model = lib.TestModel(custom_output_text='hi there')
    request = [lib.ModelRequest(parts=[lib.UserPromptPart('x')])]
    async with model.request_stream(request, None, parameters(), run_context=None) as streamed:
        kinds = [type(event).__name__ async for event in streamed]
    return [sorted(set(kinds)), [part.content for part in streamed.get().parts]]


def test_model_request_stream_takes_a_run_context() -> None:
    from pydantic_ai.models import ModelRequestParameters as RefParameters

    from threadline.models import ModelRequestParameters

    ref = asyncio.run(a_model_streamed_directly(library('ref'), RefParameters))
    ours = asyncio.run(a_model_streamed_directly(library('ours'), ModelRequestParameters))
    assert ours[1] == ref[1] == ['hi there']
    assert 'PartStartEvent' in ours[0]


async def a_streamed_call_without_arguments(lib: SimpleNamespace) -> Any:
    calls = 0

    async def stream(messages: list[Any], info: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            yield {0: lib.DeltaToolCall(name='t', tool_call_id='c1')}
        else:
            yield 'done'

    agent = lib.Agent(lib.FunctionModel(lambda m, i: None, stream_function=stream))

    @agent.tool_plain
    def t() -> str:
        return 'ok'

    async with agent.run_stream('x') as result:
        output = await result.get_output()
    calls_made = [p for m in result.all_messages() for p in m.parts if p.part_kind == 'tool-call']
    return [output, [(c.tool_name, c.args) for c in calls_made]]


def test_a_streamed_call_without_arguments_has_args_none() -> None:
    ref, ours = (asyncio.run(a_streamed_call_without_arguments(library(name))) for name in LIBS)
    assert ours == ref == ['done', [('t', None)]]


async def a_handler_and_a_tool_that_raises(lib: SimpleNamespace) -> Any:
    async def stream(messages: list[Any], info: Any) -> Any:
        yield {0: lib.DeltaToolCall(name='t', json_args='{}', tool_call_id='c1')}

    agent = lib.Agent(lib.FunctionModel(lambda m, i: None, stream_function=stream))

    @agent.tool_plain
    def t() -> str:
        raise RuntimeError('broke')

    seen: list[str] = []

    async def handler(ctx: Any, events: Any) -> None:
        async for event in events:
            seen.append(type(event).__name__)

    try:
        await agent.run('x', event_stream_handler=handler)
    except RuntimeError:
        seen.append('raised')
    return seen


def test_event_stream_handler_sees_the_calls_before_a_tool_error() -> None:
    ref, ours = (asyncio.run(a_handler_and_a_tool_that_raises(library(name))) for name in LIBS)
    assert ours == ref
    assert ours[-2:] == ['FunctionToolCallEvent', 'raised']


async def breaking_out_of_stream_text(lib: SimpleNamespace) -> Any:
    log: list[str] = []

    async def stream(messages: list[Any], info: Any) -> Any:
        try:
            for i in range(5):
                yield f'w{i} '
                await asyncio.sleep(0.05)
        finally:
            log.append('model stream closed')

    agent = lib.Agent(lib.FunctionModel(lambda m, i: None, stream_function=stream))
    async with agent.run_stream('x') as result:
        async for text in result.stream_text(delta=True, debounce_by=None):
            log.append(text)
            break
        log.append('after break')
    log.append('after the block')
    return log


def test_breaking_out_of_stream_text_closes_the_model_stream() -> None:
    ref, ours = (asyncio.run(breaking_out_of_stream_text(library(name))) for name in LIBS)
    assert ours == ref
    assert ours == ['w0 ', 'after break', 'model stream closed', 'after the block']
