"""OpenTelemetry spans: ids on every span, content only when asked, two serialization passes."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from threadline import Agent, ModelResponse, RunContext, TextPart, ToolCallPart
from threadline.capabilities import Instrumentation, MessageHistoryMutatedWarning
from threadline.models.function import AgentInfo, FunctionModel
from threadline.models.test import TestModel


def tracing() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_run_and_request_spans_carry_ids_but_no_content_by_default() -> None:
    provider, exporter = tracing()
    agent = Agent(TestModel(), capabilities=[Instrumentation(tracer_provider=provider)])

    @agent.tool_plain
    def lookup(order: str) -> str:
        return 'SECRET-CONTENT'

    result = agent.run_sync('SECRET-PROMPT')
    spans = exporter.get_finished_spans()
    run_span = next(s for s in spans if s.name == 'invoke_agent agent')
    requests = [s for s in spans if s.name.startswith('chat ')]
    assert len(requests) == 2 and all(
        s.parent is not None and s.parent.span_id == run_span.context.span_id for s in requests
    )
    assert run_span.attributes['gen_ai.agent.call.id'] == result.run_id
    assert run_span.attributes['gen_ai.conversation.id'] == result.conversation_id
    [tool] = [s for s in spans if s.name == 'execute_tool lookup']
    assert tool.parent is not None and tool.parent.span_id == run_span.context.span_id
    dump = json.dumps([dict(s.attributes) for s in spans])
    assert 'SECRET' not in dump
    # the messages' structure is kept: roles, part types, the tool's name and call id
    shape = json.loads(requests[1].attributes['gen_ai.input.messages'])
    assert [m['role'] for m in shape] == ['user', 'assistant', 'user']
    assert shape[2]['parts'] == [
        {'type': 'tool_call_response', 'id': tool.attributes['gen_ai.tool.call.id'], 'name': 'lookup'}
    ]


def test_content_capture_and_the_final_history() -> None:
    provider, exporter = tracing()
    agent = Agent(TestModel(), capabilities=[Instrumentation(tracer_provider=provider, include_content=True)])
    result = agent.run_sync('hello there')
    spans = {s.name: s for s in exporter.get_finished_spans()}
    request = next(s for name, s in spans.items() if name.startswith('chat '))
    assert json.loads(request.attributes['gen_ai.input.messages']) == [
        {'role': 'user', 'parts': [{'type': 'text', 'content': 'hello there'}]}
    ]
    history = json.loads(spans['invoke_agent agent'].attributes['pydantic_ai.all_messages'])
    assert history[-1] == {'role': 'assistant', 'parts': [{'type': 'text', 'content': result.output}]}
    assert spans['invoke_agent agent'].attributes['final_result'] == result.output


def test_two_serialization_passes_over_a_100_request_run() -> None:
    provider, _ = tracing()
    instrumentation = Instrumentation(tracer_provider=provider, include_content=True)

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        steps = sum(isinstance(m, ModelResponse) for m in messages)
        if steps < 99:
            return ModelResponse(parts=[ToolCallPart('step', {}, f'c{steps}')])
        return ModelResponse(parts=[TextPart('done')])

    agent = Agent(FunctionModel(respond), capabilities=[instrumentation])

    @agent.tool_plain
    def step() -> str:
        return 'ok'

    from threadline import UsageLimits

    result = agent.run_sync('go', usage_limits=UsageLimits(request_limit=None))
    messages = len(result.all_messages())
    assert result.usage.requests == 100 and messages == 200
    assert instrumentation.serializations == 2 * messages  # not O(N^2): each message once, plus the end pass


def test_in_place_mutation_is_detected_at_the_end_of_the_run() -> None:
    provider, exporter = tracing()
    agent = Agent(TestModel(), capabilities=[Instrumentation(tracer_provider=provider, include_content=True)])

    @agent.tool
    def rewrite(ctx: RunContext[None]) -> str:
        ctx.messages[0].parts[0].content = 'edited in place'  # what the documents say not to do
        return 'ok'

    with pytest.warns(MessageHistoryMutatedWarning, match='In-place mutation of 1 message'):
        agent.run_sync('original')
    run_span = next(s for s in exporter.get_finished_spans() if s.name == 'invoke_agent agent')
    assert 'edited in place' in run_span.attributes['pydantic_ai.all_messages']
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        Agent(TestModel(), capabilities=[Instrumentation(tracer_provider=provider, include_content=True)]).run_sync(
            'fine'
        )
