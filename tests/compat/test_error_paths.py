"""Error paths as in pydantic-ai 2.62: the same mistake raises the same exception type in both
libraries (the wording may differ), at the same moment (registration, construction, the run)."""

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library

LIBS = ('ref', 'ours')


def two_text_outputs(lib: SimpleNamespace) -> Any:
    return lib.Agent('test', output_type=[str, str])


def a_context_tool_whose_first_parameter_is_not_the_context(lib: SimpleNamespace) -> Any:
    agent = lib.Agent('test')

    @agent.tool
    def lookup(x: int) -> str:
        return str(x)


def a_plain_tool_that_asks_for_the_context(lib: SimpleNamespace) -> Any:
    agent = lib.Agent('test')

    @agent.tool_plain
    def lookup(ctx: lib.RunContext[None], x: int) -> str:  # type: ignore[name-defined]
        return str(x)


def a_tool_timeout_that_is_not_positive(lib: SimpleNamespace) -> Any:
    agent = lib.Agent('test')

    @agent.tool_plain(timeout=-1)
    def lookup() -> str:
        return ''


def an_empty_stream_function(lib: SimpleNamespace) -> Any:
    async def nothing(messages: list[Any], info: Any) -> Any:
        return
        yield ''

    async def run() -> Any:
        agent = lib.Agent(lib.FunctionModel(lambda m, i: None, stream_function=nothing))
        async with agent.run_stream('x') as result:
            return await result.get_output()

    return asyncio.run(run())


def an_empty_response_cut_by_the_token_limit(lib: SimpleNamespace) -> Any:
    cut = lib.FunctionModel(lambda m, i: lib.ModelResponse(parts=[], finish_reason='length'))
    return lib.Agent(cut).run_sync('x')


def run_stream_events_entered_twice(lib: SimpleNamespace) -> Any:
    async def run() -> None:
        events = lib.Agent('test').run_stream_events('x')
        async with events as first:
            async for _ in first:
                pass
        async with events:
            pass

    return asyncio.run(run())


def a_tool_name_taken_twice(lib: SimpleNamespace) -> Any:
    agent = lib.Agent('test')

    @agent.tool_plain
    def x() -> str:
        return ''

    @agent.tool_plain(name='x')
    def y() -> str:
        return ''


def a_tool_with_negative_retries(lib: SimpleNamespace) -> Any:
    agent = lib.Agent('test')

    @agent.tool_plain(retries=-1)
    def lookup() -> str:
        return ''


def an_output_tool_with_negative_retries(lib: SimpleNamespace) -> Any:
    return lib.ToolOutput(int, max_retries=-1)


def a_native_output_holding_an_image(lib: SimpleNamespace) -> Any:
    return lib.Agent('test', output_type=lib.NativeOutput([lib.BinaryImage]))


def a_prompted_output_holding_an_image(lib: SimpleNamespace) -> Any:
    return lib.Agent('test', output_type=lib.PromptedOutput([int, lib.BinaryImage]))


def a_native_output_holding_deferred_requests(lib: SimpleNamespace) -> Any:
    return lib.Agent('test', output_type=lib.NativeOutput([int, lib.DeferredToolRequests]))


def _repeating_call_ids(lib: SimpleNamespace, second_tool: str, output_type: Any) -> Any:
    ran: list[str] = []

    def model(messages: list[Any], info: Any) -> Any:
        calls = [lib.ToolCallPart('lookup', {}, tool_call_id='a'), lib.ToolCallPart(second_tool, {}, tool_call_id='a')]
        return lib.ModelResponse(parts=calls if len(messages) == 1 else [lib.TextPart('done')])

    agent = lib.Agent(lib.FunctionModel(model), output_type=output_type)

    @agent.tool_plain
    def lookup() -> str:
        ran.append('lookup')
        if output_type is not str:
            raise lib.CallDeferred()
        return 'found'

    try:
        return agent.run_sync('x').output
    finally:
        assert ran == []  # refused before any call runs


def two_tool_calls_with_one_id(lib: SimpleNamespace) -> Any:
    return _repeating_call_ids(lib, 'lookup', str)


def a_tool_call_and_an_unknown_call_with_one_id(lib: SimpleNamespace) -> Any:
    return _repeating_call_ids(lib, 'no_such_tool', str)


def two_deferred_calls_with_one_id(lib: SimpleNamespace) -> Any:
    return _repeating_call_ids(lib, 'lookup', [str, lib.DeferredToolRequests])


def invalid_output_arguments_in_run_stream(lib: SimpleNamespace) -> Any:
    async def run() -> Any:
        agent = lib.Agent(lib.TestModel(custom_output_args={'not': 'a number'}), output_type=int)
        async with agent.run_stream('x') as result:
            return await result.get_output()

    return asyncio.run(run())


SCENARIOS = [
    two_text_outputs,
    a_context_tool_whose_first_parameter_is_not_the_context,
    a_plain_tool_that_asks_for_the_context,
    a_tool_timeout_that_is_not_positive,
    an_empty_stream_function,
    an_empty_response_cut_by_the_token_limit,
    run_stream_events_entered_twice,
    a_tool_name_taken_twice,
    a_tool_with_negative_retries,
    an_output_tool_with_negative_retries,
    a_native_output_holding_an_image,
    a_prompted_output_holding_an_image,
    a_native_output_holding_deferred_requests,
    two_tool_calls_with_one_id,
    a_tool_call_and_an_unknown_call_with_one_id,
    two_deferred_calls_with_one_id,
    invalid_output_arguments_in_run_stream,
]


def raised(scenario: Any, name: str) -> str:
    try:
        scenario(library(name))
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return type(error).__name__
    return 'nothing raised'


@pytest.mark.parametrize('scenario', SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_the_same_mistake_raises_the_same_exception_type(scenario: Any) -> None:
    ref, ours = (raised(scenario, name) for name in LIBS)
    assert ours == ref
    assert ours != 'nothing raised'
