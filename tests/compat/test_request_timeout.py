"""The `request_timeout` model setting, as pydantic-ai 2.62 enforces it: a request (or a stream,
to its last chunk) that overruns it raises `ModelRequestTimeout`, and a `FallbackModel` gives
each model a deadline of its own and falls back when one runs out."""

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library_with

LIBS = ('ref', 'ours')


def _names(name: str) -> SimpleNamespace:
    return library_with(name, exceptions=('ModelRequestTimeout',), **{'models.fallback': ('FallbackModel',)})


def _slow(lib: SimpleNamespace, delay: float, text: str) -> Any:
    async def answer(messages: Any, info: Any) -> Any:
        await asyncio.sleep(delay)
        return lib.ModelResponse(parts=[lib.TextPart(text)])

    async def streamed(messages: Any, info: Any) -> Any:
        yield text[:2]
        await asyncio.sleep(delay)  # the deadline covers the stream's last chunk
        yield text[2:]

    return lib.FunctionModel(answer, stream_function=streamed, model_name=f'slow-{text}')


def _outcome(name: str, case: str) -> tuple[Any, ...]:
    lib = _names(name)
    settings = {'request_timeout': 0.05}
    if case == 'fallback':
        agent = lib.Agent(lib.FallbackModel(_slow(lib, 1.0, 'late'), _slow(lib, 0.0, 'in time')))
    else:
        agent = lib.Agent(_slow(lib, 1.0 if case != 'in time' else 0.0, 'answer'))

    async def run() -> Any:
        if case == 'stream':
            async with agent.run_stream('hi', model_settings=settings) as streamed:
                return await streamed.get_output()
        return (await agent.run('hi', model_settings=settings)).output

    try:
        return ('ok', asyncio.run(run()))
    except lib.ModelRequestTimeout as error:
        return ('timed out', str(error), error.timeout, error.model_name)


@pytest.mark.parametrize('case', ['request', 'stream', 'in time', 'fallback'])
def test_a_request_past_its_deadline(case: str) -> None:
    ours = _outcome('ours', case)
    assert ours == _outcome('ref', case)
    if case in ('request', 'stream'):
        assert ours[0] == 'timed out'


def test_the_setting_must_be_a_positive_number() -> None:
    from threadline import Agent
    from threadline.exceptions import UserError
    from threadline.models.test import TestModel

    with pytest.raises(UserError, match='request_timeout must be a positive number of seconds'):
        Agent(TestModel()).run_sync('hi', model_settings={'request_timeout': -1})
