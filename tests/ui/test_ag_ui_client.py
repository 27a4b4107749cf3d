"""Our AG-UI event stream consumed by the real client: `@ag-ui/client`'s `HttpAgent` (which checks
the event order and applies the events to its messages) under Node, against a loopback server."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.ui.test_vercel_ai_client import JS, node  # noqa: F401 - the fixture that provides Node and the packages
from threadline import Agent
from threadline.messages import ModelResponse, TextPart, ThinkingPart, ToolCallPart, ToolReturnPart
from threadline.models.function import AgentInfo, FunctionModel
from threadline.ui.ag_ui import ag_ui_events, encode


def weather() -> Agent[None, str]:
    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if any(isinstance(p, ToolReturnPart) for m in messages for p in getattr(m, 'parts', [])):
            return ModelResponse(parts=[TextPart('It is sunny in Paris.')])
        return ModelResponse(parts=[ThinkingPart('Paris, then.'), ToolCallPart('get_weather', {'city': 'Paris'}, 'c1')])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return f'sunny in {city}'

    return agent


@pytest.fixture
def serving() -> Iterator[tuple[str, list[str]]]:
    """A loopback server answering every POST with the SSE text in the list it yields."""
    body: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get('content-length', 0)))
            payload = body[0].encode()
            self.send_response(200)
            self.send_header('content-type', 'text/event-stream')
            self.send_header('content-length', str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f'http://127.0.0.1:{server.server_address[1]}/agent', body
    finally:
        server.shutdown()


async def test_the_ag_ui_client_assembles_the_run(node: str, serving: tuple[str, list[str]]) -> None:  # noqa: F811
    url, body = serving
    events = [e async for e in ag_ui_events(weather().run_stream_events('Weather?'), thread_id='t1', run_id='r1')]
    body.append(''.join(encode(e) for e in events))
    done = subprocess.run(
        [node, str(JS / 'run_ag_ui_agent.mjs'), url], capture_output=True, text=True, timeout=60, cwd=JS
    )
    assert done.returncode == 0, done.stderr[-2000:]
    messages = json.loads(done.stdout)
    # The client ends with the run's snapshot: our history as AG-UI messages.
    roles = [m['role'] for m in messages]
    assert roles == ['user', 'reasoning', 'assistant', 'tool', 'assistant'], roles
    call = messages[2]['toolCalls'][0]
    assert call['function'] == {'name': 'get_weather', 'arguments': '{"city":"Paris"}'} and call['id'] == 'c1'
    assert messages[3]['content'] == 'sunny in Paris' and messages[-1]['content'] == 'It is sunny in Paris.'
