"""TestModel and FunctionModel behave as the reference documents them."""

from __future__ import annotations

from typing import Any

import pytest

from threadline import Agent, ModelResponse, RequestUsage, TextPart
from threadline.models.function import AgentInfo, FunctionModel
from threadline.models.test import TestModel


def test_test_model_calls_every_tool_with_generated_args_then_answers() -> None:
    agent = Agent(TestModel())

    @agent.tool_plain
    def t_str(city: str, n: int, flag: bool, ratio: float) -> str:
        return f'{city}|{n}|{flag}|{ratio}'

    @agent.tool_plain
    def t_none() -> dict[str, list[int]]:
        return {'k': [1, 2]}

    result = agent.run_sync('go')
    call_response = result.all_messages()[1]
    assert [(c.tool_name, c.args, c.tool_call_id) for c in call_response.tool_calls] == [
        ('t_str', {'city': 'a', 'n': 0, 'flag': False, 'ratio': 0.0}, 'pyd_ai_tool_call_id__t_str'),
        ('t_none', {}, 'pyd_ai_tool_call_id__t_none'),
    ]
    assert result.output == '{"t_str":"a|0|False|0.0","t_none":{"k":[1,2]}}'
    assert [(r.model_name, r.provider_name) for r in result.all_messages()[1::2]] == [('test', 'test')] * 2
    seeded = Agent(TestModel(seed=1, call_tools=['t_a']))

    @seeded.tool_plain
    def t_a(city: str, n: int, flag: bool) -> str:
        return f'{city}|{n}|{flag}'

    @seeded.tool_plain
    def t_b() -> str:
        return 'never called'

    assert seeded.run_sync('x').output == '{"t_a":"b|1|True"}'
    with pytest.raises(Exception, match='unknown tool'):
        Agent(TestModel(call_tools=['missing'])).run_sync('x')


def test_test_model_custom_text_and_history_with_responses() -> None:
    assert Agent(TestModel(custom_output_text='hello world')).run_sync('x').output == 'hello world'
    agent = Agent(TestModel())

    @agent.tool_plain
    def t() -> str:
        return 'v'

    first = agent.run_sync('go')
    again = agent.run_sync('again', message_history=first.all_messages())
    assert len(again.new_messages()) == 2 and again.output == '{"t":"v"}'  # tools are not called again


def test_function_model_agent_info_and_usage() -> None:
    seen: list[AgentInfo] = []

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        return ModelResponse(
            parts=[TextPart('x')], usage=RequestUsage(input_tokens=7, output_tokens=3), model_name='custom'
        )

    agent = Agent(FunctionModel(respond), instructions='Be brief.', model_settings={'temperature': 0.5})

    @agent.tool_plain
    def tool_one(q: str) -> str:
        """Look something up."""
        return q

    result = agent.run_sync('go')
    info = seen[0]
    assert [(t.name, t.description, t.parameters_json_schema) for t in info.function_tools] == [
        (
            'tool_one',
            'Look something up.',
            {
                'additionalProperties': False,
                'properties': {'q': {'type': 'string'}},
                'required': ['q'],
                'type': 'object',
            },
        ),
    ]
    assert (info.allow_text_output, info.output_tools, info.model_settings, info.instructions) == (
        True,
        [],
        {'temperature': 0.5},
        'Be brief.',
    )
    assert result.response.usage == RequestUsage(input_tokens=7, output_tokens=3)
    assert result.response.model_name == 'function:respond:'  # the model's own name wins
    estimated = Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart('one')]))).run_sync('hello there')
    assert estimated.response.usage == RequestUsage(input_tokens=52, output_tokens=1)


async def test_async_function_model() -> None:
    async def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('async ok')])

    assert (await Agent(FunctionModel(respond)).run('x')).output == 'async ok'


def test_function_model_needs_a_function() -> None:
    with pytest.raises(TypeError, match='needs `function`'):
        FunctionModel()
