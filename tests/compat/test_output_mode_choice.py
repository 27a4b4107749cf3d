"""A structured output of plain types goes to Claude as pydantic-ai 2.62 sends it while Claude
thinks: as JSON text (`output_config.format`, or prompted instructions where the model has no
JSON schema output) instead of an output tool it could not force, and the JSON answer is the run's
output on both sides. Without thinking, or with a `ToolOutput`, the output tool stays.

An agent run per side against a local server that answers with the JSON; the first request
bodies are compared, folded as `test_request_bodies` folds them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.compat.test_request_bodies import FOLD
from tests.models.providers.server import ProviderServer, fixture

pytest.importorskip('pydantic_ai')

ANSWER = {'city': 'Paris', 'degrees': 21}


@dataclass
class Weather:
    """The weather in a city."""

    city: str
    degrees: int


@dataclass
class Alert:
    """A weather warning."""

    city: str
    level: str


@pytest.fixture(scope='module')
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


def _json_answer(streamed: bool, text: str) -> dict[str, Any]:
    """The recorded answer with `text` as its one text block (the reference streams)."""
    if not streamed:
        answer = copy.deepcopy(fixture('anthropic_text.json'))
        answer['body']['content'] = [{'type': 'text', 'text': text}]
        return answer
    answer = copy.deepcopy(fixture('anthropic_stream.json'))
    delta = json.dumps({'type': 'content_block_delta', 'index': 0, 'delta': {'type': 'text_delta', 'text': text}})
    lines = [line for line in answer['sse'] if 'text_delta' not in line]
    at = next(i for i, line in enumerate(lines) if 'content_block_stop' in line)
    answer['sse'] = [*lines[:at], f'event: content_block_delta\ndata: {delta}', *lines[at:]]
    return answer


async def _run(server: ProviderServer, side: str, name: str, output: str, settings: dict[str, Any]) -> Any:
    text = json.dumps(ANSWER if output != 'two' else {'result': {'kind': 'Weather', 'data': ANSWER}})
    server.replies.clear()
    if side == 'ours':
        from threadline import Agent, ToolOutput
        from threadline.models.anthropic import AnthropicModel, AnthropicProvider

        model: Any = AnthropicModel(name, provider=AnthropicProvider(base_url=server.url, api_key='k', max_retries=0))
        server.queue(_json_answer(False, text))
    else:
        from pydantic_ai import Agent, ToolOutput  # type: ignore[assignment]
        from pydantic_ai.models.anthropic import AnthropicModel  # type: ignore[assignment]
        from pydantic_ai.providers.anthropic import AnthropicProvider  # type: ignore[assignment]

        model = AnthropicModel(name, provider=AnthropicProvider(api_key='k', base_url=server.url))
        # It streams a request with a large `max_tokens`: all but the older models' default.
        server.queue(_json_answer(not name.startswith('claude-3'), text))
    output_type: Any = {'one': Weather, 'two': [Weather, Alert], 'tool': ToolOutput(Weather)}[output]
    before = len(server.requests)
    try:
        result = await Agent(model, output_type=output_type).run('Weather in Paris?', model_settings=settings)
        got: Any = result.output
    except Exception as error:  # noqa: BLE001 - the outcome compared (a tool answer that is text, say)
        got = type(error).__name__
    return FOLD['anthropic'](server.requests[before]['body']), got


CASES = [
    ('claude-sonnet-4-5', 'one', {'thinking': True}),  # budget thinking, JSON schema output: native
    ('claude-sonnet-4-5', 'two', {'thinking': 'high'}),
    ('claude-3-5-haiku-latest', 'one', {'thinking': True}),  # no JSON schema output: prompted
    ('claude-sonnet-4-6', 'one', {'thinking': 'low'}),  # adaptive: forcing would stop the thinking
    ('claude-opus-5', 'one', {}),  # thinks by default
    ('claude-sonnet-4-5', 'one', {'anthropic_thinking': {'type': 'enabled', 'budget_tokens': 2048}}),
    ('claude-sonnet-4-5', 'one', {}),  # no thinking: the output tool, forced
    ('claude-sonnet-4-6', 'one', {'thinking': False}),
    ('claude-sonnet-4-5', 'tool', {'thinking': True}),  # a ToolOutput stays a tool
]


@pytest.mark.parametrize(('name', 'output', 'settings'), CASES)
async def test_a_thinking_claude_is_asked_for_json_text_as_the_reference_asks(
    server: ProviderServer, name: str, output: str, settings: dict[str, Any]
) -> None:
    ours_body, ours_output = await _run(server, 'ours', name, output, settings)
    reference_body, reference_output = await _run(server, 'reference', name, output, settings)
    assert ours_body == reference_body
    assert ours_output == reference_output
