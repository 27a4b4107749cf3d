"""`StreamedRunResult.response` and `.cancelled`, and `cancel()` in the middle of a read, against
pydantic-ai 2.62, one script body on both libraries."""

import asyncio
from types import SimpleNamespace
from typing import Any

from tests.compat._libs import library

LIBS = ('ref', 'ours')


def words_model(lib: SimpleNamespace) -> Any:
    async def stream(messages: list[Any], info: Any) -> Any:
        for word in ('a ', 'b ', 'c ', 'd'):
            yield word
            await asyncio.sleep(0.01)

    return lib.FunctionModel(lambda m, i: None, stream_function=stream)


def _shown(response: Any) -> tuple[list[str], str]:
    return [p.content for p in response.parts], response.state


async def response_as_it_streams(lib: SimpleNamespace) -> Any:
    agent = lib.Agent(words_model(lib))
    seen: list[Any] = []
    async with agent.run_stream('x') as result:
        async for text in result.stream_text(debounce_by=None):
            seen.append((text, _shown(result.response)))
        seen.append(('after', _shown(result.response), result.cancelled))
    return seen


def test_response_is_what_arrived_then_what_was_recorded() -> None:
    ref, ours = (asyncio.run(response_as_it_streams(library(n))) for n in LIBS)
    assert ours == ref
    assert ours[-1] == ('after', (['a b c d'], 'complete'), False)


async def cancelled_mid_read(lib: SimpleNamespace) -> Any:
    agent = lib.Agent(words_model(lib))
    read: list[str] = []
    async with agent.run_stream('x') as result:
        async for text in result.stream_text(debounce_by=None):
            read.append(text)
            if len(read) == 2:
                await result.cancel()
        outcome = [result.cancelled, result.is_complete, result.response.state]
        try:
            outcome.append(await result.get_output())
        except Exception as error:  # noqa: BLE001 - the type is what is compared
            outcome.append(type(error).__name__)
    kept = [(m.kind, getattr(m, 'state', None)) for m in result.all_messages()]
    return read, outcome, kept


def test_cancel_mid_read_keeps_what_arrived_as_interrupted() -> None:
    (ref_read, ref_outcome, ref_kept), (read, outcome, kept) = (
        asyncio.run(cancelled_mid_read(library(n))) for n in LIBS
    )
    assert kept == ref_kept == [('request', 'complete'), ('response', 'interrupted')]
    assert outcome[:3] == ref_outcome[:3] == [True, True, 'interrupted']
    # Kept differences (README): the read ends at cancel() and the run has no output (RunCancelled);
    # pydantic-ai 2.62 reads on and ends the run with the interrupted text as its output.
    assert read == ['a ', 'a b '] and outcome[3] == 'RunCancelled'
    assert ref_read[-1] == ref_outcome[3] == 'a b c d'


def test_a_sync_stream_has_the_same_properties() -> None:
    lib = library('ours')
    with lib.Agent(words_model(lib)).run_stream_sync('x') as result:
        assert result.cancelled is False
        assert list(result.stream_text(debounce_by=None))[-1] == 'a b c d'
        assert _shown(result.response) == (['a b c d'], 'complete')


async def cancelled_before_reading(lib: SimpleNamespace) -> Any:
    async with lib.Agent(words_model(lib)).run_stream('x') as result:
        await result.cancel()
    kept = [(m.kind, getattr(m, 'state', None), [p.content for p in m.parts]) for m in result.all_messages()]
    return result.cancelled, kept


def test_cancel_before_reading_keeps_the_first_part_as_interrupted() -> None:
    ref, ours = (asyncio.run(cancelled_before_reading(library(n))) for n in LIBS)
    assert ours == ref
    assert ours == (True, [('request', 'complete', ['x']), ('response', 'interrupted', ['a '])])
