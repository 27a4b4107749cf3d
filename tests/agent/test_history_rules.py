"""The history rules of the spec, one test per rule (each fails if its rule breaks)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from threadline import (
    Agent,
    ModelRequest,
    ModelResponse,
    RunContext,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserError,
    UserPromptPart,
)
from threadline.models.function import AgentInfo, FunctionModel
from threadline.models.test import TestModel

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def recording_model(seen: list[Any], text: str = 'ok') -> FunctionModel:
    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.append((messages, info))
        return ModelResponse(parts=[TextPart(text)])

    return FunctionModel(respond)


def test_non_empty_history_means_no_new_system_prompt() -> None:
    agent = Agent(TestModel(), system_prompt='SYS')
    fresh = agent.run_sync('hi')
    assert isinstance(fresh.all_messages()[0].parts[0], SystemPromptPart)
    history = [ModelRequest(parts=[UserPromptPart('old', timestamp=T0)]), ModelResponse(parts=[TextPart('a')])]
    again = agent.run_sync('next', message_history=history)
    assert not any(isinstance(p, SystemPromptPart) for m in again.all_messages() for p in m.parts)
    empty = agent.run_sync('x', message_history=[])  # an empty history counts as no history
    assert isinstance(empty.all_messages()[0].parts[0], SystemPromptPart)


def test_every_new_request_carries_running_instructions_and_only_those_are_sent() -> None:
    seen: list[Any] = []
    old = [
        ModelRequest(parts=[UserPromptPart('q1', timestamp=T0)], instructions='OLD'),
        ModelResponse(parts=[TextPart('a1')]),
    ]
    agent = Agent(recording_model(seen), instructions='NEW')

    @agent.tool_plain
    def noop() -> str:
        return 'done'

    def two_steps(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.append((messages, info))
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart('noop', {}, 'c1')])
        return ModelResponse(parts=[TextPart('fin')])

    result = agent.run_sync('q2', message_history=old, model=FunctionModel(two_steps), instructions='RUN')
    new_requests = [m for m in result.new_messages() if isinstance(m, ModelRequest)]
    assert [r.instructions for r in new_requests] == ['NEW\n\nRUN', 'NEW\n\nRUN']
    assert result.all_messages()[0].instructions == 'OLD'  # stored, untouched
    assert [info.instructions for _, info in seen] == ['NEW\n\nRUN', 'NEW\n\nRUN']


def test_input_list_is_never_mutated() -> None:
    history = [
        ModelRequest(parts=[UserPromptPart('q', timestamp=T0)]),
        ModelResponse(parts=[TextPart('a')], timestamp=T0),
    ]
    before = copy.deepcopy(history)
    ids = [id(m) for m in history]
    Agent(TestModel()).run_sync('next', message_history=history)
    assert history == before and [id(m) for m in history] == ids
    trailing = [*history, ModelRequest(parts=[UserPromptPart('pending', timestamp=T0)])]
    snapshot = copy.deepcopy(trailing)
    Agent(TestModel()).run_sync(message_history=trailing)
    assert trailing == snapshot


def test_new_messages_exclude_history_including_resumed_trailing_request() -> None:
    trailing = ModelRequest(parts=[UserPromptPart('q2 pending', timestamp=T0)])
    history = [
        ModelRequest(parts=[UserPromptPart('q1', timestamp=T0)]),
        ModelResponse(parts=[TextPart('a1')]),
        trailing,
    ]
    result = Agent(TestModel(), instructions='Plain.').run_sync(message_history=history)
    assert [type(m) for m in result.new_messages()] == [ModelResponse]
    resumed = result.all_messages()[2]
    assert resumed is not trailing and resumed.run_id == result.run_id and resumed.instructions == 'Plain.'
    assert trailing.run_id is None
    stamped = ModelRequest(parts=[UserPromptPart('q', timestamp=T0)], run_id='r-old')
    kept = Agent(TestModel()).run_sync(message_history=[stamped])
    assert kept.all_messages()[0].run_id == 'r-old'


def test_history_ending_with_tool_calls_and_no_prompt_runs_them() -> None:
    agent = Agent(TestModel(), instructions='Be helpful.')

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return f'sunny in {city}'

    history = [
        ModelRequest(parts=[UserPromptPart('weather?', timestamp=T0)]),
        ModelResponse(parts=[ToolCallPart('get_weather', {'city': 'Oslo'}, 'call_1')]),
    ]
    result = agent.run_sync(message_history=history)
    first_new = result.new_messages()[0]
    assert isinstance(first_new, ModelRequest)
    assert first_new.parts == [
        ToolReturnPart('get_weather', 'sunny in Oslo', 'call_1', timestamp=first_new.parts[0].timestamp)
    ]
    assert result.output == '{"get_weather":"sunny in Oslo"}'


def test_new_prompt_over_unanswered_complete_calls_raises() -> None:
    history = [
        ModelRequest(parts=[UserPromptPart('q', timestamp=T0)]),
        ModelResponse(parts=[ToolCallPart('t', {}, 'c1')]),
    ]
    with pytest.raises(UserError, match='unprocessed tool calls') as info:
        Agent(TestModel()).run_sync('new prompt', message_history=history)
    assert 'repair' in str(info.value)


def test_reusing_history_with_a_different_model_and_agent_keeps_tool_parts() -> None:
    first = Agent(TestModel(), instructions='A')

    @first.tool_plain
    def lookup(q: str) -> str:
        return 'found'

    r1 = first.run_sync('look it up')
    seen: list[Any] = []
    second = Agent(recording_model(seen, 'second'), instructions='B')
    r2 = second.run_sync('and then?', message_history=r1.all_messages())
    sent = seen[0][0]
    kinds = [p.part_kind for m in sent for p in m.parts]
    assert 'tool-call' in kinds and 'tool-return' in kinds
    assert seen[0][1].instructions == 'B'
    assert r2.conversation_id == r1.conversation_id
    r3 = first.run_sync(
        'model override', message_history=r2.all_messages(), model=TestModel(custom_output_text='other')
    )
    assert r3.output == 'other' and r3.response.model_name == 'test'


def test_bad_history_elements_are_named() -> None:
    with pytest.raises(UserError, match=r'message_history\[1\] is a dict'):
        Agent(TestModel()).run_sync('x', message_history=[ModelRequest(parts=[]), {'kind': 'request'}])  # type: ignore[list-item]


def test_no_history_no_prompt_no_instructions() -> None:
    with pytest.raises(UserError, match='No message history, user prompt, or instructions provided'):
        Agent(TestModel()).run_sync()


def test_no_prompt_history_ending_in_text_makes_no_request() -> None:
    history = [ModelRequest(parts=[UserPromptPart('q', timestamp=T0)]), ModelResponse(parts=[TextPart('old answer')])]
    result = Agent(TestModel()).run_sync(message_history=history)
    assert result.output == 'old answer' and result.new_messages() == []


def test_missing_model() -> None:
    with pytest.raises(UserError, match='`model` must either be set'):
        Agent().run_sync('hi')


def test_run_context_sees_the_run(request: pytest.FixtureRequest) -> None:
    seen: dict[str, Any] = {}
    agent = Agent(TestModel(), deps_type=str)

    @agent.tool
    def inspect_ctx(ctx: RunContext[str]) -> str:
        seen.update(
            deps=ctx.deps,
            run_id=ctx.run_id,
            conv=ctx.conversation_id,
            call=ctx.tool_call_id,
            name=ctx.tool_name,
            n=len(ctx.messages),
            retry=ctx.retry,
            requests=ctx.usage.requests,
        )
        return 'ok'

    result = agent.run_sync('go', deps='DEPS')
    assert seen == {
        'deps': 'DEPS',
        'run_id': result.run_id,
        'conv': result.conversation_id,
        'call': 'pyd_ai_tool_call_id__inspect_ctx',
        'name': 'inspect_ctx',
        'n': 2,
        'retry': 0,
        'requests': 1,
    }
