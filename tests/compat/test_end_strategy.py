"""Which calls of a response run, and what answers the others, under each `end_strategy`, in a
run and in `run_stream`, as in pydantic-ai 2.62 (one script body on both libraries).

Rules (the reference's): under `'early'` the first valid output call in response order is final
and every other call, unknown ones included, is answered "not executed", the output calls' results
first. `run_stream` hands a response over on its first output call, which decides before any
tool runs: it is final even when a sibling tool asks for a retry, and an invalid one ends the run
(a stream cannot be retried). Results bind to function and unknown calls by id, so an id repeated
among them fails the step before any tool runs; a repeat of the final output call's id is answered
as the final call."""

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pydantic
import pytest

from tests.compat._libs import library


class A(pydantic.BaseModel):
    a: int


class B(pydantic.BaseModel):
    b: int


def _calls(lib: SimpleNamespace, scenario: str, names: list[str]) -> list[Any]:
    call = lib.ToolCallPart
    return {
        'output then tools': [call(names[0], {'a': 1}, 'o1'), call('f', {}, 'f1'), call('g', {}, 'g1')],
        'a tool then the output': [call('f', {}, 'f1'), call(names[0], {'a': 1}, 'o1'), call('g', {}, 'g1')],
        'two outputs': [call(names[1], {'b': 2}, 'o2'), call(names[0], {'a': 1}, 'o1'), call('f', {}, 'f1')],
        'an invalid output first': [
            call(names[0], {'a': 'x'}, 'o1'),
            call(names[1], {'b': 2}, 'o2'),
            call('f', {}, 'f1'),
        ],
        'an unknown tool after the output': [call(names[0], {'a': 1}, 'o1'), call('nope', {}, 'n1')],
        'a retrying sibling': [call('r', {}, 'r1'), call(names[0], {'a': 1}, 'o1')],
        'two outputs with one id': [call(names[0], {'a': 1}, 'o1'), call(names[1], {'b': 2}, 'o1')],
        'an output and a tool with one id': [call(names[0], {'a': 1}, 'o1'), call('f', {}, 'o1')],
        'two tools with one id': [call('f', {}, 'f1'), call('g', {}, 'f1'), call(names[0], {'a': 1}, 'o1')],
    }[scenario]


def responses(lib: SimpleNamespace, scenario: str, strategy: str, stream: bool) -> list[Any]:
    ran: list[str] = []

    def parts(messages: list[Any], info: Any) -> list[Any]:
        names = [t.name for t in info.output_tools]
        if len(messages) == 1:
            return _calls(lib, scenario, names)
        return [lib.ToolCallPart(names[0], {'a': 9}, 'o9')]

    def model(messages: list[Any], info: Any) -> Any:
        return lib.ModelResponse(parts=parts(messages, info))

    async def stream_model(messages: list[Any], info: Any) -> Any:
        for i, part in enumerate(parts(messages, info)):
            yield {
                i: lib.DeltaToolCall(
                    name=part.tool_name, json_args=json.dumps(part.args), tool_call_id=part.tool_call_id
                )
            }

    agent = lib.Agent(lib.FunctionModel(model, stream_function=stream_model), output_type=[A, B], end_strategy=strategy)

    @agent.tool_plain
    def f() -> str:
        ran.append('f')
        return 'F'

    @agent.tool_plain
    def g() -> str:
        ran.append('g')
        return 'G'

    @agent.tool_plain
    def r() -> str:
        ran.append('r')
        raise lib.ModelRetry('try r again')

    async def streamed() -> tuple[Any, list[Any]]:
        async with agent.run_stream('hi') as result:
            output = await result.get_output()
        return output, result.all_messages()

    try:
        if stream:
            output, messages = asyncio.run(streamed())
        else:
            result = agent.run_sync('hi')
            output, messages = result.output, result.all_messages()
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return ['error', type(error).__name__, sorted(ran)]
    history = [
        [p.part_kind, p.tool_name, p.tool_call_id, p.args_as_dict() if p.part_kind == 'tool-call' else str(p.content)]
        for m in messages[1:]
        for p in m.parts
    ]
    return [repr(output), sorted(ran), history]  # sync tools run in threads: their order is not fixed


SCENARIOS = [
    'output then tools',
    'a tool then the output',
    'two outputs',
    'an invalid output first',
    'an unknown tool after the output',
    'a retrying sibling',
    'two outputs with one id',
    'an output and a tool with one id',
    'two tools with one id',
]


@pytest.mark.parametrize('stream', [False, True])
@pytest.mark.parametrize('strategy', ['early', 'graceful', 'exhaustive'])
@pytest.mark.parametrize('scenario', SCENARIOS)
def test_what_a_response_with_an_output_call_runs(scenario: str, strategy: str, stream: bool) -> None:
    ours = responses(library('ours'), scenario, strategy, stream)
    assert ours == responses(library('ref'), scenario, strategy, stream)
