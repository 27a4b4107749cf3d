"""Output modes through Threadline and pydantic-ai 2.62: for each `output_type` the model is offered
the same output tools (names, descriptions, schemas) or the same JSON object (native / prompted,
with the same instructions), and the same answers give the same outputs and records."""

from __future__ import annotations

from typing import Any

import pydantic
import pydantic_ai
import pytest
from pydantic_ai import messages as ref_messages
from pydantic_ai.models.function import FunctionModel as RefFunctionModel

import threadline
from threadline import messages as our_messages
from threadline.exceptions import UserError
from threadline.models import ModelProfile
from threadline.models.function import FunctionModel

LIBS = {
    'threadline': (threadline, our_messages, FunctionModel),
    'reference': (pydantic_ai, ref_messages, RefFunctionModel),
}


class City(pydantic.BaseModel):
    """A city somewhere."""

    name: str


class Country(pydantic.BaseModel):
    code: str


def shout(text: str) -> str:
    return text.upper()


def make_city(name: str, population: int) -> City:
    """Build a city."""
    return City(name=f'{name} ({population})')


def cases(lib: Any) -> dict[str, Any]:
    return {
        'union': [City, Country],
        'union type': City | Country,
        'tool output': lib.ToolOutput(City, name='give_city', description='Return the city', max_retries=3),
        'named tool outputs and text': [lib.ToolOutput(City, name='c'), lib.ToolOutput(Country, name='k'), str],
        'native': lib.NativeOutput(City),
        'native union': lib.NativeOutput([City, Country], name='geo', description='A place'),
        'prompted': lib.PromptedOutput(City),
        'prompted union': lib.PromptedOutput([City, Country]),
        'text function': lib.TextOutput(shout),
        'output function': make_city,
        'int': int,
    }


ANSWERS = {
    'native union': '{"result": {"kind": "Country", "data": {"code": "NO"}}}',
    'prompted union': '{"result": {"kind": "City", "data": {"name": "Oslo"}}}',
}


def run(lib: str, case: str) -> tuple[list[Any], Any, list[Any]]:
    mod, msgs, model_cls = LIBS[lib]
    seen: list[Any] = []

    def model(messages: list[Any], info: Any) -> Any:
        params = info.model_request_parameters
        obj = params.output_object
        seen.append(
            (
                params.output_mode,
                [(t.name, t.description, t.parameters_json_schema) for t in info.output_tools],
                info.allow_text_output,
                obj and (obj.name, obj.description, obj.json_schema),
                info.instructions,
            )
        )
        if info.output_tools:
            tool = info.output_tools[-1]
            props = tool.parameters_json_schema.get('properties', {})
            args = {'name': 'Oslo', 'population': 700} if 'population' in props else {'code': 'NO'}
            args = {'response': 5} if 'response' in props else ({'name': 'Oslo'} if list(props) == ['name'] else args)
            return msgs.ModelResponse(parts=[msgs.ToolCallPart(tool.name, args, 'o')])
        text = ANSWERS.get(case, '{"name": "Oslo"}' if params.output_mode in ('native', 'prompted') else 'hello')
        return msgs.ModelResponse(parts=[msgs.TextPart(text)])

    result = mod.Agent(model_cls(model), output_type=cases(mod)[case]).run_sync('go')
    records = [[(p.part_kind, getattr(p, 'content', None)) for p in m.parts] for m in result.all_messages()[1:]]
    return seen, result.output, records


@pytest.mark.parametrize('case', list(cases(threadline)))
def test_each_output_type_is_offered_and_read_as_in_pydantic_ai(case: str) -> None:
    ours, reference = run('threadline', case), run('reference', case)
    assert ours[0] == reference[0]
    assert repr(ours[1]) == repr(reference[1])
    assert ours[2] == reference[2]


def test_the_outputs_a_user_gets() -> None:
    assert run('threadline', 'output function')[1] == City(name='Oslo (700)')
    assert run('threadline', 'text function')[1] == 'HELLO'
    assert run('threadline', 'native union')[1] == Country(code='NO')
    assert run('threadline', 'int')[1] == 5
    offered = run('threadline', 'union')[0][0][1]
    assert [name for name, *_ in offered] == ['final_result_City', 'final_result_Country']


def test_an_invalid_json_answer_is_sent_back_as_validation_feedback() -> None:
    answers = iter(['{"nam": 1}', 'not json', '{"name": "Oslo"}'])

    def model(messages: list[Any], info: Any) -> Any:
        return our_messages.ModelResponse(parts=[our_messages.TextPart(next(answers))])

    result = threadline.Agent(FunctionModel(model), output_type=threadline.NativeOutput(City), retries=3).run_sync('go')
    feedback = [p for m in result.all_messages() for p in m.parts if p.part_kind == 'retry-feedback']
    assert result.output == City(name='Oslo')
    assert [f.content[0]['type'] for f in feedback] == ['missing', 'json_invalid']


def test_output_type_mistakes_are_clear_errors() -> None:
    with pytest.raises(UserError, match='At least one output type must be provided other than `None`'):
        threadline.Agent(output_type=None)
    with pytest.raises(UserError, match='`NativeOutput` must be the only output type'):
        threadline.Agent(output_type=[threadline.NativeOutput(City), str])
    agent = threadline.Agent(
        FunctionModel(lambda m, i: our_messages.ModelResponse(parts=[]), profile=ModelProfile()),
        output_type=threadline.NativeOutput(City),
    )
    with pytest.raises(UserError, match='Native structured output is not supported'):
        agent.run_sync('go')


def test_a_native_union_may_hold_an_output_function() -> None:
    def answer(messages: list[Any], info: Any) -> Any:
        text = '{"result": {"kind": "make_city", "data": {"name": "Oslo", "population": 7}}}'
        return our_messages.ModelResponse(parts=[our_messages.TextPart(text)])

    agent = threadline.Agent(FunctionModel(answer), output_type=threadline.NativeOutput([Country, make_city]))
    assert agent.run_sync('go').output == City(name='Oslo (7)')
