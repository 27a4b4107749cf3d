"""TestModel and FunctionModel report the reference's usage estimates, run for run, streamed or not,
so a test that asserts token counts passes after the import swap."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import pydantic_ai
import pydantic_ai.messages
import pydantic_ai.models.function
import pydantic_ai.models.test
import pytest
from pydantic import BaseModel

import threadline
import threadline.messages
import threadline.models.function
import threadline.models.test

REFERENCE = SimpleNamespace(
    Agent=pydantic_ai.Agent,
    ModelRetry=pydantic_ai.ModelRetry,
    TestModel=pydantic_ai.models.test.TestModel,
    FunctionModel=pydantic_ai.models.function.FunctionModel,
    m=pydantic_ai.messages,
)
OURS = SimpleNamespace(
    Agent=threadline.Agent,
    ModelRetry=threadline.ModelRetry,
    TestModel=threadline.models.test.TestModel,
    FunctionModel=threadline.models.function.FunctionModel,
    m=threadline.messages,
)


class City(BaseModel):
    name: str
    population: int


def _plain(lib: Any) -> Any:
    return lib.Agent(lib.TestModel()).run_sync('What is the capital of France?')


def _with_tool(lib: Any) -> Any:
    agent = lib.Agent(lib.TestModel(), instructions='Be terse.')

    @agent.tool_plain
    def weather(city: str) -> str:
        return f'Sunny in {city}, 21 degrees'

    return agent.run_sync('Weather in Paris?')


def _continued(lib: Any) -> Any:
    agent = lib.Agent(lib.TestModel(custom_output_text='Paris is the capital.'))
    first = agent.run_sync('Capital of France?')
    return agent.run_sync('And of Spain?', message_history=first.all_messages())


def _retry(lib: Any) -> Any:
    agent = lib.Agent(lib.TestModel())
    calls: list[int] = []

    @agent.tool_plain
    def flaky(n: int) -> str:
        calls.append(n)
        if len(calls) == 1:
            raise lib.ModelRetry('try again with more care')
        return 'done'

    return agent.run_sync('go')


def _structured(lib: Any) -> Any:
    return lib.Agent(lib.TestModel(), output_type=City).run_sync('A big city')


def _function(lib: Any) -> Any:
    def answer(messages: list[Any], info: Any) -> Any:
        count = sum(len(m.parts) for m in messages)
        return lib.m.ModelResponse(parts=[lib.m.TextPart(f'I saw {count} parts, thank you.')])

    agent = lib.Agent(lib.FunctionModel(answer))
    first = agent.run_sync('one two three')
    return agent.run_sync('four', message_history=first.all_messages())


def _function_stream(lib: Any) -> Any:
    async def stream(messages: list[Any], info: Any) -> AsyncIterator[str]:
        for chunk in ('The answer, ', 'as you asked: ', '42.'):
            yield chunk

    agent = lib.Agent(lib.FunctionModel(stream_function=stream))

    async def main() -> Any:
        async with agent.run_stream('Tell me the answer') as result:
            await result.get_output()
        return result

    return asyncio.run(main())


def _test_stream(lib: Any) -> Any:
    agent = lib.Agent(lib.TestModel(custom_output_text='streamed words arrive one by one'))
    history = _plain(lib).all_messages()

    async def main() -> Any:
        async with agent.run_stream('Stream it', message_history=history) as result:
            await result.get_output()
        return result

    return asyncio.run(main())


CASES: dict[str, Callable[[Any], Any]] = {
    'plain': _plain,
    'a tool call': _with_tool,
    'a run over a history': _continued,
    'a tool retry': _retry,
    'structured output': _structured,
    'FunctionModel over a history': _function,
    'FunctionModel streaming': _function_stream,
    'TestModel streaming over a history': _test_stream,
}


def _usages(result: Any) -> tuple[Any, ...]:
    usage = result.usage() if callable(result.usage) else result.usage
    responses = [
        (m.usage.input_tokens, m.usage.output_tokens)
        for m in result.all_messages()
        if getattr(m, 'kind', None) == 'response'
    ]
    return (usage.input_tokens, usage.output_tokens, usage.requests, usage.tool_calls, responses)


@pytest.mark.parametrize('case', list(CASES))
def test_usage_estimates_match_the_reference(case: str) -> None:
    assert _usages(CASES[case](OURS)) == _usages(CASES[case](REFERENCE))
