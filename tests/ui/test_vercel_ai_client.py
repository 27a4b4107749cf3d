"""Our UI message stream read by the real client: the `ai` package's own SSE parser (which validates
every chunk against its schema) and `readUIMessageStream` (what `useChat` uses to build the
assistant's message), run under Node from `tests/js`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from threadline import Agent
from threadline.exceptions import ModelRetry
from threadline.messages import ModelResponse, TextPart, ThinkingPart, ToolCallPart, ToolReturnPart
from threadline.messages._events import AgentRunResultEvent
from threadline.models.function import AgentInfo, FunctionModel
from threadline.ui.vercel_ai import VercelAIAdapter, sse, ui_message_chunks

JS = Path(__file__).parents[1] / 'js'


@pytest.fixture(scope='module')
def node() -> str:
    """Node, with the lockfile's client packages installed (`npm ci`, as `.ci/run` does)."""
    node, npm = shutil.which('node'), shutil.which('npm')
    if node is None or npm is None:
        pytest.skip('Node.js and npm are not installed: the client-library protocol tests need them')
    if not (JS / 'node_modules' / 'ai').is_dir():
        done = subprocess.run(
            [npm, 'ci', '--no-audit', '--no-fund'], cwd=JS, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f'npm ci in {JS} failed (the npm registry is needed once): {done.stderr[-2000:]}'
    return node


def agent() -> Agent[None, str]:
    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        answered = [p for m in messages for p in getattr(m, 'parts', []) if isinstance(p, ToolReturnPart)]
        if answered:
            return ModelResponse(parts=[TextPart('Paris is sunny; Oslo is unknown.')])
        calls = [ToolCallPart('get_weather', {'city': city}, f'c-{city}') for city in ('Paris', 'Oslo')]
        return ModelResponse(parts=[ThinkingPart('Two cities.'), TextPart('Checking.'), *calls])

    weather = Agent(FunctionModel(model))

    @weather.tool_plain
    def get_weather(city: str) -> str:
        if city == 'Oslo':
            raise ModelRetry('the weather service does not know Oslo')
        return f'sunny in {city}'

    return weather


def _without_ids(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in p.items() if k not in ('id', 'providerMetadata', 'callProviderMetadata')} for p in parts]


async def test_the_ai_package_assembles_what_the_run_produced(node: str) -> None:
    results: list[Any] = []

    async def events() -> Any:
        async for event in agent().run_stream_events('Weather in Paris and Oslo?'):
            if isinstance(event, AgentRunResultEvent):
                results.append(event.result)
            yield event

    stream = ''.join([line async for line in sse(ui_message_chunks(events(), message_id='m1'))])
    done = subprocess.run(
        [node, str(JS / 'read_ui_stream.mjs')], input=stream, capture_output=True, text=True, timeout=60, cwd=JS
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assembled = json.loads(done.stdout)

    [expected] = VercelAIAdapter.dump_messages(results[0].new_messages()[1:])  # the assistant's turn
    ours = json.loads(json.dumps(expected.model_dump(by_alias=True, exclude_none=True)))
    assert assembled['role'] == 'assistant' and assembled['id'] == 'm1'
    assert _without_ids(assembled['parts']) == _without_ids(ours['parts'])
    states = [(p['type'], p.get('state')) for p in assembled['parts']]
    assert ('tool-get_weather', 'output-available') in states and ('tool-get_weather', 'output-error') in states
