"""What a response that carries both an output and tool calls becomes, and how a structured output
that arrives as text is read, as in pydantic-ai 2.62: one script body runs on both libraries.

Rules (the reference's): under `end_strategy='early'`, text validated against the output's schema
(native, prompted, or a bare type: 'auto') beside plain function tool calls is the final result
and the calls are answered "not executed"; plain text never is (it may be a preamble), except
that `run_stream` ends on the first text it streams. A bare type takes its JSON as text (fences
allowed); a type that is not an object is `{"response": ...}`, and a JSON string of the value is
taken too."""

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pydantic
import pytest

from tests.compat._libs import library


class Answer(pydantic.BaseModel):
    n: int


def _history(messages: list[Any]) -> list[Any]:
    return [
        [type(m).__name__, m.instructions if type(m).__name__ == 'ModelRequest' else None]
        + [
            [p.part_kind, getattr(p, 'tool_name', None), str(getattr(p, 'content', getattr(p, 'args', '')))]
            for p in m.parts
        ]
        for m in messages
    ]


def text_beside_tools(lib: SimpleNamespace, mode: str, strategy: str, stream: bool) -> list[Any]:
    ran: list[int] = []

    def model(messages: list[Any], info: Any) -> Any:
        if len(messages) == 1:
            return lib.ModelResponse(parts=[lib.TextPart('{"n": 1}'), lib.ToolCallPart('helper', {}, 'h1')])
        return lib.ModelResponse(parts=[lib.TextPart(json.dumps({'n': len(messages)}))])

    async def stream_model(messages: list[Any], info: Any) -> Any:
        if len(messages) == 1:
            yield '{"n": 1}'
            yield {0: lib.DeltaToolCall(name='helper', json_args='{}', tool_call_id='h1')}
            return
        yield json.dumps({'n': len(messages)})

    output_type = {
        'native': lib.NativeOutput(Answer),
        'prompted': lib.PromptedOutput(Answer),
        'auto': Answer,
        'text': str,
    }[mode]
    agent = lib.Agent(
        lib.FunctionModel(model, stream_function=stream_model), output_type=output_type, end_strategy=strategy
    )

    @agent.tool_plain
    def helper() -> str:
        ran.append(1)
        return 'h'

    if stream:

        async def streamed() -> tuple[Any, list[Any]]:
            async with agent.run_stream('hi') as result:
                output = await result.get_output()
            return output, result.all_messages()

        output, messages = asyncio.run(streamed())
    else:
        result = agent.run_sync('hi')
        output, messages = result.output, result.all_messages()
    return [str(output), len(ran), _history(messages)]


@pytest.mark.parametrize('stream', [False, True])
@pytest.mark.parametrize('strategy', ['early', 'graceful', 'exhaustive'])
@pytest.mark.parametrize('mode', ['native', 'prompted', 'auto', 'text'])
def test_an_output_beside_tool_calls(mode: str, strategy: str, stream: bool) -> None:
    ours = text_beside_tools(library('ours'), mode, strategy, stream)
    assert ours == text_beside_tools(library('ref'), mode, strategy, stream)
    if strategy == 'early' and mode != 'text':
        assert ours[:2] == ['n=1', 0]  # the text was the output; the tool did not run
    if mode == 'prompted':  # the schema prompt is the output's, not stored with the request
        assert all(entry[1] is None for entry in ours[2] if entry[0] == 'ModelRequest')


CASES: dict[str, tuple[Any, Any]] = {
    'json': (Answer, '{"n": 5}'),
    'fenced json': (Answer, '```json\n{"n": 5}\n```'),
    'not json': (Answer, 'hello'),
    'invalid json': (Answer, '{"n": "x"}'),
    'explicit tool output': ('ToolOutput', '{"n": 5}'),
    'a list as text': (list[int], '[1, 2]'),
    'a list as a JSON string argument': (list[int], {'response': '[1, 2]'}),
    'arguments as a JSON string': (list[int], '"[1, 2]"'),
    'invalid text beside a tool call': (Answer, None),
}


def structured_answers(lib: SimpleNamespace, case: str) -> list[Any]:
    output_type, first = CASES[case]
    output_type = lib.ToolOutput(Answer) if output_type == 'ToolOutput' else output_type

    def model(messages: list[Any], info: Any) -> Any:
        name = info.output_tools[0].name if info.output_tools else None
        if len(messages) == 1:
            if case == 'invalid text beside a tool call':
                return lib.ModelResponse(parts=[lib.TextPart('{"n": "bad"}'), lib.ToolCallPart('helper', {}, 'h1')])
            if 'argument' in case:
                return lib.ModelResponse(parts=[lib.ToolCallPart(name, first, 'o1')])
            return lib.ModelResponse(parts=[lib.TextPart(first)])
        args = {'response': [9]} if 'list' in case or 'arguments' in case else {'n': 9}
        return lib.ModelResponse(parts=[lib.ToolCallPart(name, args, 'o9')])

    agent = lib.Agent(lib.FunctionModel(model), output_type=output_type)

    @agent.tool_plain
    def helper() -> str:
        return 'h'

    result = agent.run_sync('hi')
    return [repr(result.output), _history(result.all_messages()[1:])]


@pytest.mark.parametrize('case', list(CASES))
def test_a_structured_output_read_from_text_or_a_json_string(case: str) -> None:
    ours = structured_answers(library('ours'), case)
    assert ours == structured_answers(library('ref'), case)
