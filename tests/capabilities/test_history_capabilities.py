"""ProcessHistory, ReinjectSystemPrompt and repair inside runs, including the spec's processor examples."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from threadline import (
    Agent,
    ModelMessage,
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
from threadline.capabilities import ProcessHistory, ReinjectSystemPrompt
from threadline.models.function import AgentInfo, FunctionModel
from threadline.models.test import TestModel

if TYPE_CHECKING:
    from threadline import RunContext as HiddenContext

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def capture() -> tuple[FunctionModel, list[list[ModelMessage]]]:
    received: list[list[ModelMessage]] = []

    def capture_model_function(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        received.append(list(messages))
        return ModelResponse(parts=[TextPart(content='Provider response')])

    return FunctionModel(capture_model_function), received


def test_spec_test_history_processor() -> None:
    function_model, received = capture()

    def filter_responses(messages: list[ModelMessage]) -> list[ModelMessage]:
        return [msg for msg in messages if isinstance(msg, ModelRequest)]

    agent = Agent(function_model, capabilities=[ProcessHistory(filter_responses)])
    message_history = [
        ModelRequest(parts=[UserPromptPart(content='Question 1')]),
        ModelResponse(parts=[TextPart(content='Answer 1')]),
    ]
    result = agent.run_sync('Question 2', message_history=message_history)
    # The spec asserts two adjacent requests; repair merges adjacent requests before every model
    # request (the reference agrees), so the provider receives one request holding both prompts.
    [request] = received[0]
    assert isinstance(request, ModelRequest)
    assert [p.content for p in request.parts] == ['Question 1', 'Question 2']
    assert request.run_id is None
    # the processor's result replaced the stored history (the response is gone there too)
    assert [type(m) for m in result.all_messages()] == [ModelRequest, ModelRequest, ModelResponse]


def test_spec_keep_recent_and_multiple_processors() -> None:
    function_model, received = capture()

    async def keep_recent_messages(messages: list[ModelMessage]) -> list[ModelMessage]:
        return messages[-5:] if len(messages) > 5 else messages

    def filter_responses(messages: list[ModelMessage]) -> list[ModelMessage]:
        return [msg for msg in messages if isinstance(msg, ModelRequest)]

    long_history: list[ModelMessage] = []
    for i in range(6):
        long_history += [ModelRequest(parts=[UserPromptPart(f'q{i}')]), ModelResponse(parts=[TextPart(f'a{i}')])]
    Agent(function_model, capabilities=[ProcessHistory(keep_recent_messages)]).run_sync(
        'now', message_history=long_history
    )
    assert len(received[0]) == 5
    order: list[str] = []

    def first(messages: list[ModelMessage]) -> list[ModelMessage]:
        order.append('first')
        return filter_responses(messages)

    def second(messages: list[ModelMessage]) -> list[ModelMessage]:
        order.append('second')
        assert all(isinstance(m, ModelRequest) for m in messages)
        return messages[-5:]

    Agent(function_model, capabilities=[ProcessHistory(first), ProcessHistory(second)]).run_sync(
        'now', message_history=long_history
    )
    assert order == ['first', 'second']


def test_spec_context_aware_processor_and_summarizer() -> None:
    seen_tokens: list[int] = []

    def context_aware_processor(ctx: RunContext, messages: list[ModelMessage]) -> list[ModelMessage]:
        seen_tokens.append(ctx.usage.total_tokens)
        if ctx.usage.total_tokens > 1000:
            return messages[-3:]
        return messages

    Agent(TestModel(), capabilities=[ProcessHistory(context_aware_processor)]).run_sync('hi')
    assert seen_tokens == [0]

    summarize_agent = Agent(TestModel(custom_output_text='SUMMARY'), instructions='Summarize this conversation.')

    async def summarize_old_messages(messages: list[ModelMessage]) -> list[ModelMessage]:
        if len(messages) > 10:
            summary = await summarize_agent.run(message_history=messages[:10])
            return summary.new_messages() + messages[-1:]
        return messages

    function_model, received = capture()
    history: list[ModelMessage] = []
    for i in range(6):
        history += [ModelRequest(parts=[UserPromptPart(f'q{i}')]), ModelResponse(parts=[TextPart(f'a{i}')])]
    Agent(function_model, capabilities=[ProcessHistory(summarize_old_messages)]).run_sync(
        'latest', message_history=history
    )
    sent = received[0]
    # the summarizer's new messages: its (instructions-only) request and the summary, then the last request
    assert [type(m) for m in sent] == [ModelRequest, ModelResponse, ModelRequest]
    assert sent[1].parts[0].content == 'SUMMARY' and sent[2].parts[-1].content == 'latest'


def test_processor_type_hints_must_resolve() -> None:
    def hidden(ctx: HiddenContext, messages: list[ModelMessage]) -> list[ModelMessage]:
        return messages

    with pytest.raises(UserError, match=r'Unable to resolve the type annotations of .*hidden'):
        ProcessHistory(hidden)


def test_processor_result_checks() -> None:
    with pytest.raises(UserError, match='cannot be empty'):
        Agent(TestModel(), capabilities=[ProcessHistory(lambda messages: [])]).run_sync('x')
    with pytest.raises(UserError, match='must end with a `ModelRequest`'):
        Agent(
            TestModel(), capabilities=[ProcessHistory(lambda messages: [ModelResponse(parts=[TextPart('x')])])]
        ).run_sync('x')


def test_processor_and_new_messages() -> None:
    trailing = ModelRequest(parts=[UserPromptPart('pending', timestamp=T0)], timestamp=T0)
    history = [ModelRequest(parts=[UserPromptPart('q', timestamp=T0)]), ModelResponse(parts=[TextPart('a')]), trailing]

    def rebuild(messages: list[ModelMessage]) -> list[ModelMessage]:
        last = messages[-1]
        return [*messages[:-1], dataclasses.replace(last, parts=list(last.parts))]  # preserves parts/ts/etc.

    result = Agent(TestModel(), capabilities=[ProcessHistory(rebuild)]).run_sync(message_history=history)
    assert [type(m) for m in result.new_messages()] == [ModelResponse]

    def insert_note(ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        if any(m.metadata == {'note': True} for m in messages):
            return messages
        note = ModelRequest(parts=[UserPromptPart('note')], run_id=ctx.run_id, metadata={'note': True})
        return [*messages[:-1], note, messages[-1]]

    noted = Agent(TestModel(), capabilities=[ProcessHistory(insert_note)]).run_sync('go', message_history=history[:2])
    assert noted.new_messages()[0].metadata == {'note': True}


def test_hooks_vs_processor_persistence() -> None:
    from threadline.capabilities import Hooks

    def drop_first(ctx: RunContext[Any], request_context: Any) -> Any:
        request_context.messages = request_context.messages[2:]
        return request_context

    history = [ModelRequest(parts=[UserPromptPart('q')]), ModelResponse(parts=[TextPart('a')])]
    via_hook = Agent(TestModel(), capabilities=[Hooks(before_model_request=drop_first)]).run_sync(
        'x', message_history=history
    )
    assert len(via_hook.all_messages()) == 4
    via_processor = Agent(TestModel(), capabilities=[ProcessHistory(lambda m: m[2:])]).run_sync(
        'x', message_history=history
    )
    assert len(via_processor.all_messages()) == 2


def test_reinject_system_prompt() -> None:
    function_model, received = capture()
    agent = Agent(function_model, system_prompt='Be terse.', capabilities=[ReinjectSystemPrompt()])
    history = [ModelRequest(parts=[UserPromptPart('q')]), ModelResponse(parts=[TextPart('a')])]
    result = agent.run_sync('next', message_history=history)
    assert received[0][0].parts[0] == SystemPromptPart('Be terse.', timestamp=received[0][0].parts[0].timestamp)
    assert isinstance(result.all_messages()[0].parts[0], SystemPromptPart)
    assert history[0].parts[0].content == 'q'  # the caller's objects are untouched
    fresh = agent.run_sync('hello')  # a fresh run does not get the prompt twice
    assert sum(isinstance(p, SystemPromptPart) for p in fresh.all_messages()[0].parts) == 1
    foreign = [
        ModelRequest(parts=[SystemPromptPart('Other agent.'), UserPromptPart('q')]),
        ModelResponse(parts=[TextPart('a')]),
    ]
    kept = agent.run_sync('next', message_history=foreign)
    assert [p.content for p in kept.all_messages()[0].parts if isinstance(p, SystemPromptPart)] == ['Other agent.']
    replacing = Agent(
        function_model, system_prompt='Be terse.', capabilities=[ReinjectSystemPrompt(replace_existing=True)]
    )
    replaced = replacing.run_sync('next', message_history=foreign)
    assert [p.content for p in replaced.all_messages()[0].parts if isinstance(p, SystemPromptPart)] == ['Be terse.']


def test_runs_repair_history_and_frontier_rules() -> None:
    function_model, received = capture()
    agent = Agent(function_model)
    dangling_mid = [
        ModelRequest(parts=[UserPromptPart('q')]),
        ModelResponse(parts=[ToolCallPart('t', {}, 'c1')], timestamp=T0),
        ModelRequest(parts=[UserPromptPart('never mind')]),
        ModelResponse(parts=[TextPart('ok')]),
    ]
    result = agent.run_sync('next', message_history=dangling_mid)
    synthesized = result.all_messages()[2].parts[0]
    assert isinstance(synthesized, ToolReturnPart) and synthesized.outcome == 'interrupted'
    assert result.new_messages()[0].parts[0].content == 'next'  # the repair request is not new
    interrupted = [
        ModelRequest(parts=[UserPromptPart('q')]),
        ModelResponse(parts=[ToolCallPart('t', {}, 'c9')], state='interrupted'),
    ]
    resumed = agent.run_sync('continue', message_history=interrupted)
    assert resumed.all_messages()[2].parts[0].outcome == 'interrupted'
    # a complete trailing request after an unanswered call: stored as is, repaired on the wire
    frontier = [
        ModelRequest(parts=[UserPromptPart('q')]),
        ModelResponse(parts=[ToolCallPart('t', {}, 'c5')]),
        ModelRequest(parts=[UserPromptPart('also')]),
    ]
    received.clear()
    stored = agent.run_sync(message_history=frontier)
    assert not any(isinstance(p, ToolReturnPart) for p in stored.all_messages()[2].parts)
    wire_parts = received[0][2].parts
    assert isinstance(wire_parts[0], ToolReturnPart) and wire_parts[0].outcome == 'interrupted'


def test_editing_with_replace_inside_a_processor_and_a_tool() -> None:
    def redact(messages: list[ModelMessage]) -> list[ModelMessage]:
        out = []
        for message in messages:
            if isinstance(message, ModelRequest):
                parts = [
                    dataclasses.replace(p, content='[redacted]')
                    if isinstance(p, UserPromptPart) and 'secret' in p.content
                    else p
                    for p in message.parts
                ]
                message = dataclasses.replace(message, parts=parts)
            out.append(message)
        return out

    function_model, received = capture()
    result = Agent(function_model, capabilities=[ProcessHistory(redact)]).run_sync('my secret is 42')
    assert received[0][0].parts[0].content == '[redacted]'
    assert result.all_messages()[0].parts[0].content == '[redacted]'

    agent = Agent(TestModel())

    @agent.tool
    def compact_earlier(ctx: RunContext[None]) -> str:
        first = ctx.messages[0]
        ctx.messages[0] = dataclasses.replace(first, parts=[UserPromptPart('compacted')])
        return 'done'

    edited = agent.run_sync('a very long original prompt')
    assert edited.all_messages()[0].parts[0].content == 'compacted'
