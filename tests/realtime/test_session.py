"""Realtime sessions with the scripted `TestRealtimeModel`: enqueue in `asap` / `when_idle` modes,
tools, turn content rules, and a history that hands off to an ordinary run."""

from __future__ import annotations

from typing import Any

import pytest

from threadline import Agent, ModelRequest, ModelResponse, RunContext, TextPart, ToolCallPart, UserPromptPart
from threadline.exceptions import UserError
from threadline.messages import EnqueuedMessagesEvent, RequestUsage, SystemPromptPart, ToolReturnPart
from threadline.models.function import FunctionModel
from threadline.realtime import (
    RealtimeSession,
    RealtimeTextDelta,
    RealtimeToolResult,
    RealtimeTurnComplete,
    TestRealtimeModel,
)


def says(text: str, **usage: int) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)], usage=RequestUsage(**usage) if usage else RequestUsage())


async def drive(session: RealtimeSession, turns: int) -> list[Any]:
    """Events until the model has completed `turns` responses."""
    seen: list[Any] = []
    async for event in session:
        seen.append(event)
        if sum(isinstance(e, RealtimeTurnComplete) for e in seen) == turns:
            break
    return seen


def user_texts(turns: list[list[Any]]) -> list[Any]:
    return [[getattr(p, 'content', None) for p in turn] for turn in turns]


async def test_an_enqueued_turn_is_delivered_answered_and_recorded() -> None:
    model = TestRealtimeModel([says('Hello there')])
    async with Agent(model).realtime(model).session() as session:
        assert session.enqueue() is None  # nothing to enqueue
        enqueue_id = session.enqueue('Hi')
        events = await drive(session, 1)
    assert isinstance(events[0], EnqueuedMessagesEvent) and events[0].enqueue_id == enqueue_id
    assert [e.delta for e in events if isinstance(e, RealtimeTextDelta)] == ['Hello ', 'there ']
    history = session.all_messages()
    assert [type(m).__name__ for m in history] == ['ModelRequest', 'ModelResponse']
    assert history[0].parts[0].content == 'Hi' and history[1].parts[0].content == 'Hello there'
    assert history[0].conversation_id == history[1].conversation_id is not None


async def test_asap_waits_for_the_response_under_way_and_when_idle_for_an_idle_model() -> None:
    model = TestRealtimeModel([says('one'), says('two'), says('three')])
    async with Agent(model).realtime(model).session() as session:
        session.enqueue('later', priority='when_idle')
        session.enqueue('first')
        session.enqueue('second')  # queued while 'first' is being answered
        events = await drive(session, 3)
    # asap turns go first, one at a time, each after the previous answer; when_idle goes last.
    assert user_texts(model.turns) == [['first'], ['second'], ['later']]
    kinds = [type(e).__name__ for e in events if not isinstance(e, RealtimeTextDelta)]
    assert kinds == ['EnqueuedMessagesEvent', 'RealtimeTurnComplete'] * 3


async def test_tools_run_and_the_history_hands_off_to_a_run() -> None:
    model = TestRealtimeModel(
        [
            ModelResponse(parts=[ToolCallPart('weather', {'city': 'Paris'}, 'c1')]),
            says('It is sunny in Paris.', input_tokens=120, output_tokens=8),
        ],
        context_window=1_000,
    )
    agent: Agent[None, str] = Agent(model)

    @agent.tool_plain
    def weather(city: str) -> str:
        return f'sunny in {city}'

    async with agent.realtime(model).session() as session:
        session.enqueue('Weather in Paris?')
        events = await drive(session, 2)
        assert session.context_window_used == pytest.approx(0.128)
    results = [e.part for e in events if isinstance(e, RealtimeToolResult)]
    assert [(r.content, r.tool_call_id) for r in results] == [('sunny in Paris', 'c1')]
    history = session.all_messages()
    assert [[p.part_kind for p in m.parts] for m in history] == [
        ['user-prompt'],
        ['tool-call'],
        ['tool-return'],
        ['text'],
    ]
    seen: list[Any] = []

    def summarizer(messages: list[Any], info: Any) -> ModelResponse:
        seen.extend(messages)
        return says('User asked about Paris weather; it is sunny.')

    summary = await Agent(FunctionModel(summarizer)).run('Summarize.', message_history=history)
    assert summary.output.startswith('User asked') and len(seen) == 5  # the voice history, then the ask
    assert summary.conversation_id == history[0].conversation_id


async def test_a_tool_can_enqueue_a_follow_up_turn() -> None:
    model = TestRealtimeModel(
        [ModelResponse(parts=[ToolCallPart('start_job', {}, 'c1')]), says('Started.'), says('Job done, noted.')]
    )
    agent: Agent[None, str] = Agent(model)

    @agent.tool
    def start_job(ctx: RunContext[None]) -> str:
        ctx.enqueue('The background job finished.')
        return 'started'

    async with agent.realtime(model).session() as session:
        session.enqueue('Run the job')
        await drive(session, 3)
    assert user_texts(model.turns)[-1] == ['The background job finished.']


async def test_turn_content_rules() -> None:
    model = TestRealtimeModel([says('ok'), says('ok')])
    async with Agent(model).realtime(model).session() as session:
        session.enqueue(SystemPromptPart('You are in incident mode.'))
        session.enqueue(SystemPromptPart('Be terse.'), 'Status?')
        await drive(session, 2)
        with pytest.raises(UserError, match='item 0 is a ToolReturnPart'):
            session.enqueue(ToolReturnPart('x', 'y', 'z'))
    alone, joined = model.turns
    assert isinstance(alone[0], SystemPromptPart)  # system prompts alone stay system prompts
    assert isinstance(joined[0], UserPromptPart) and joined[0].content == '<system>Be terse.</system>\nStatus?'
    with pytest.raises(UserError, match='closed'):
        session.enqueue('too late')


async def test_a_session_continues_a_stored_history() -> None:
    earlier = [ModelRequest(parts=[UserPromptPart('Hi')]), says('Hello')]
    earlier[0].conversation_id = earlier[1].conversation_id = 'conv-1'
    model = TestRealtimeModel([says('Welcome back')])
    async with Agent(model).realtime(model).session(message_history=earlier) as session:
        session.enqueue('Back again')
        await drive(session, 1)
    assert len(session.all_messages()) == 4 and len(session.new_messages()) == 2
    assert {m.conversation_id for m in session.all_messages()} == {'conv-1'}


def test_a_realtime_model_is_not_for_runs() -> None:
    model = TestRealtimeModel([])
    with pytest.raises(UserError, match='realtime model'):
        Agent(model).run_sync('hi')


async def test_a_deferred_capability_with_tools_is_refused_up_front() -> None:
    """The connection's tools are fixed when it opens, so a load could not reveal them."""
    from tests.agent.test_load_capability import billing

    model = TestRealtimeModel([says('hi')])
    agent = Agent(model, capabilities=[billing('threadline')])
    with pytest.raises(UserError, match="remove `defer_loading=True` from: 'billing'"):
        async with agent.realtime(model).session():
            pass


async def test_a_new_conversation_opens_with_the_agents_system_prompt_and_hands_it_off() -> None:
    model = TestRealtimeModel([says('Bonjour.')])
    agent: Agent[None, str] = Agent(model, system_prompt='Answer in French.')
    async with agent.realtime(model).session() as session:
        session.enqueue('Hello')
        await drive(session, 1)
    history = session.all_messages()
    assert [[p.part_kind for p in m.parts] for m in history] == [['system-prompt', 'user-prompt'], ['text']]
    assert history[0].parts[0].content == 'Answer in French.'
    seen: list[Any] = []

    def next_model(messages: list[Any], info: Any) -> ModelResponse:
        seen.extend(messages)
        return says('Bien sûr.')

    await Agent(FunctionModel(next_model), system_prompt='Answer in French.').run('More?', message_history=history)
    assert any(isinstance(p, SystemPromptPart) for m in seen for p in m.parts)  # the hand-off kept it
    async with agent.realtime(TestRealtimeModel([says('Encore.')])).session(message_history=history) as again:
        again.enqueue('And?')
        await drive(again, 1)
    assert sum(isinstance(p, SystemPromptPart) for m in again.all_messages() for p in m.parts) == 1  # not twice
