"""Capability hooks around a streamed run that stops on an error, as pydantic-ai 2.62 calls them,
one script body on both libraries: whether the model's stream or the reader's own block raised,
the `on_run_error` hooks hear that error (not a cancellation) and no `after_model_request` hook
runs for the response that was cut short."""

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library

LIBS = ('ref', 'ours')


def logging_agent(lib: SimpleNamespace, log: list[Any], who: str) -> Any:
    async def stream(messages: list[Any], info: Any) -> Any:
        yield 'hel'
        yield 'lo'
        if who == 'model':
            raise ValueError('the model broke')
        yield ' there'

    class Logged(lib.AbstractCapability):
        async def after_run(self, ctx: Any, *, result: Any) -> Any:
            log.append('after_run')
            return result

        async def on_run_error(self, ctx: Any, *, error: BaseException) -> Any:
            log.append(('on_run_error', type(error).__name__, str(error)))
            raise error

        async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
            log.append(('after_model_request', [p.part_kind for p in response.parts]))
            return response

        async def on_model_request_error(self, ctx: Any, *, request_context: Any, error: Exception) -> Any:
            log.append(('on_model_request_error', type(error).__name__))
            raise error

    return lib.Agent(lib.FunctionModel(lambda m, i: None, stream_function=stream), capabilities=[Logged()])


async def stopped_stream(lib: SimpleNamespace, who: str) -> Any:
    log: list[Any] = []
    agent = logging_agent(lib, log, who)
    try:
        async with agent.run_stream('x') as result:
            async for text in result.stream_text(debounce_by=None):
                if who == 'reader' and text == 'hello':
                    raise KeyError('the reader broke')
    except (ValueError, KeyError) as error:
        log.append(('raised', type(error).__name__))
    kept = [(m.kind, getattr(m, 'state', None)) for m in result.all_messages()]
    return log, kept


@pytest.mark.parametrize('who', ['model', 'reader'])
def test_a_stream_stopped_by_an_error_tells_on_run_error_that_error(who: str) -> None:
    (ref_log, ref_kept), (ours_log, ours_kept) = (asyncio.run(stopped_stream(library(n), who)) for n in LIBS)
    assert ours_log == ref_log
    assert [entry[0] for entry in ours_log] == ['on_run_error', 'raised']
    # A kept difference (README): the part read stays in the history as interrupted.
    assert ours_kept == [*ref_kept, ('response', 'interrupted')]


async def chained(lib: SimpleNamespace, how: str, recover: bool) -> list[Any]:
    async def stream(messages: list[Any], info: Any) -> Any:
        yield 'hel'
        raise ValueError('the model broke')

    log: list[Any] = []

    def capability(name: str, last: bool) -> Any:
        class Chained(lib.AbstractCapability):  # type: ignore[name-defined, misc]
            async def on_run_error(self, ctx: Any, *, error: BaseException) -> Any:
                log.append((name, type(error).__name__, str(error)))
                if last and recover:
                    return lib.AgentRunResult('recovered')
                if last:
                    raise RuntimeError(f'{name} replaced it')
                raise error

        return Chained()

    agent = lib.Agent(
        lib.FunctionModel(lambda m, i: None, stream_function=stream),
        capabilities=[capability('outer', False), capability('inner', True)],
    )
    try:
        if how == 'run_stream':
            async with agent.run_stream('x') as result:
                log.append([text async for text in result.stream_text(debounce_by=None)])
                try:
                    log.append(('output', await result.get_output()))
                except Exception as error:  # noqa: BLE001 - the type is what is compared
                    log.append(('output raised', type(error).__name__))
        else:
            async with agent.run_stream_events('x') as events:
                log.append([type(event).__name__ async for event in events][-1])
    except (ValueError, RuntimeError) as error:
        log.append(('raised', type(error).__name__, str(error)))
    return log


@pytest.mark.parametrize('how', ['run_stream', 'run_stream_events'])
def test_on_run_error_hooks_chain_over_a_broken_stream(how: str) -> None:
    ref, ours = (asyncio.run(chained(library(n), how, recover=False)) for n in LIBS)
    assert ours == ref
    assert ours[-1] == ('raised', 'RuntimeError', 'inner replaced it')


def test_a_hook_that_recovers_a_broken_stream_ends_the_run_with_its_result() -> None:
    ref_events, ours_events = (asyncio.run(chained(library(n), 'run_stream_events', recover=True)) for n in LIBS)
    assert ours_events == ref_events
    assert ours_events[-1] == 'AgentRunResultEvent'
    ours = asyncio.run(chained(library('ours'), 'run_stream', recover=True))
    # A kept difference (README): the read ends and the result is the recovery's (pydantic-ai 2.62
    # ends the read too, but its result then raises UserError as still streaming).
    assert ours == [('inner', 'ValueError', 'the model broke'), ['hel'], ('output', 'recovered')]
