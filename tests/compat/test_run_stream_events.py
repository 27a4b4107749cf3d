"""`run_stream_events()` as pydantic-ai 2.62 runs it, one script body on both libraries: the run
is `run(event_stream_handler=...)` in a background task that starts on the first read and stays
at most one event ahead of the reader; a failing tool ends the stream after its call event; a
`break` inside `async with` stops the run."""

import asyncio
import contextvars
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library

LIBS = ('ref', 'ours')
READER = contextvars.ContextVar('reader', default='before')


def tool_then_text_model(lib: SimpleNamespace, produced: list[str]) -> Any:
    calls = 0

    async def stream(messages: list[Any], info: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            produced.append('call')
            yield {0: lib.DeltaToolCall(name='t', json_args='{"x": 1}', tool_call_id='c1')}
            return
        for piece in ('a', 'b', 'c', 'd'):
            produced.append(piece)
            yield piece

    return lib.FunctionModel(lambda m, i: None, stream_function=stream)


async def read(lib: SimpleNamespace, mode: str) -> Any:
    produced: list[str] = []
    seen_by_tool: list[str] = []
    agent = lib.Agent(tool_then_text_model(lib, produced))

    @agent.tool_plain
    def t(x: int) -> str:
        seen_by_tool.append(READER.get())
        if mode == 'fail':
            raise RuntimeError('tool failed')
        return f'got {x}'

    log: list[Any] = []
    stream = agent.run_stream_events('x')
    try:
        async with stream as events:
            log.append(('entered', list(produced)))
            async for event in events:
                READER.set('after')  # set in the reader's task once the run has started
                log.append((type(event).__name__, len(produced)))
                if mode == 'break' and type(event).__name__ == 'FinalResultEvent':
                    break
    except RuntimeError as error:
        log.append(('raised', str(error)))
    return [log, seen_by_tool, produced]


@pytest.mark.parametrize('mode', ['ok', 'fail', 'break'])
def test_events_come_from_a_background_run(mode: str) -> None:
    ref, ours = (asyncio.run(read(library(name), mode)) for name in LIBS)
    assert ours == ref


def test_the_run_starts_on_the_first_read_in_its_own_context() -> None:
    log, seen_by_tool, _ = asyncio.run(read(library('ours'), 'ok'))
    assert log[0] == ('entered', [])  # entering does not start the run
    assert seen_by_tool == ['before']  # the reader's later context changes do not reach the run
    assert log[-1][0] == 'AgentRunResultEvent'


def test_a_failing_tool_is_heard_before_its_error() -> None:
    log, *_ = asyncio.run(read(library('ours'), 'fail'))
    names = [entry[0] for entry in log]
    assert names[-2:] == ['FunctionToolCallEvent', 'raised']


async def break_then_history(lib: SimpleNamespace) -> Any:
    produced: list[str] = []
    agent = lib.Agent(tool_then_text_model(lib, produced))

    @agent.tool_plain
    def t(x: int) -> str:
        return 'ok'

    async with agent.run_stream_events('x') as events:
        async for event in events:
            if type(event).__name__ == 'FunctionToolResultEvent':
                break
    await asyncio.sleep(0.05)
    return produced  # nothing more was asked of the model after the break


def test_break_stops_the_background_run() -> None:
    ref, ours = (asyncio.run(break_then_history(library(name))) for name in LIBS)
    assert ours == ref == ['call']
