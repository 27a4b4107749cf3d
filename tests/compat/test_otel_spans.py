"""The span tree of one run, Threadline's `Instrumentation` against pydantic-ai 2.62's, in an
in-memory exporter: the same spans (run, model requests, tool calls) under the same parents, with
the same GenAI attributes, with content and without."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

COMPARED = (
    'gen_ai.operation.name',
    'gen_ai.agent.name',
    'gen_ai.request.model',
    'gen_ai.response.model',
    'gen_ai.input.messages',
    'gen_ai.output.messages',
    'gen_ai.system_instructions',
    'gen_ai.tool.name',
    'gen_ai.tool.call.id',
    'gen_ai.tool.call.arguments',
    'gen_ai.tool.call.result',
    'gen_ai.usage.input_tokens',
    'gen_ai.usage.output_tokens',
    'gen_ai.aggregated_usage.input_tokens',
    'gen_ai.aggregated_usage.output_tokens',
    'pydantic_ai.all_messages',
    'final_result',
)


def tracing() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def tree(spans: tuple[ReadableSpan, ...]) -> list[tuple[str, str | None, dict[str, Any]]]:
    """(name, parent's name, compared attributes) per span, in the order they ended."""
    names = {s.context.span_id: s.name for s in spans}
    out = []
    for span in spans:
        attributes = {k: span.attributes[k] for k in COMPARED if k in span.attributes}
        for key, value in attributes.items():
            if isinstance(value, str) and value[:1] in '[{':
                attributes[key] = json.loads(value)
        out.append((span.name, names.get(span.parent.span_id) if span.parent else None, attributes))
    return out


def run(messages: Any, agent_class: Any, function_model: Any, instrumentation: Any, exporter: Any) -> list[Any]:
    """The span tree of one run: the same script, with one library's classes."""

    def model(history: list[Any], info: Any) -> Any:
        if any(isinstance(p, messages.ToolReturnPart) for m in history for p in m.parts):
            return messages.ModelResponse(parts=[messages.TextPart('Sunny in Paris.')])
        call = messages.ToolCallPart('weather', {'city': 'Paris'}, 'c1')
        return messages.ModelResponse(parts=[messages.TextPart('Checking.'), call])

    agent = agent_class(
        function_model(model), name='forecaster', instructions='Be brief.', capabilities=[instrumentation]
    )

    @agent.tool_plain
    def weather(city: str) -> str:
        return f'sunny in {city}'

    agent.run_sync('Weather in Paris?')
    return tree(exporter.get_finished_spans())


def ours(include_content: bool) -> list[Any]:
    import threadline.messages as messages
    from threadline import Agent
    from threadline.capabilities import Instrumentation
    from threadline.models.function import FunctionModel

    provider, exporter = tracing()
    capability = Instrumentation(tracer_provider=provider, include_content=include_content)
    return run(messages, Agent, FunctionModel, capability, exporter)


def theirs(include_content: bool) -> list[Any]:
    import pydantic_ai.messages as messages
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    provider, exporter = tracing()
    capability = Instrumentation(InstrumentationSettings(tracer_provider=provider, include_content=include_content))
    return run(messages, Agent, FunctionModel, capability, exporter)


@pytest.mark.parametrize('include_content', [True, False])
def test_the_span_tree_is_the_references(include_content: bool) -> None:
    assert ours(include_content) == theirs(include_content)
