"""Threadline's server serving a pydantic-ai Agent (`ServedAgent`, `threadline serve --agent`):
the Vercel AI and AG-UI streams, stored turns, approvals announced and resumed, and the audit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.pydantic_ai import _served_app
from tests.server.test_app import chunks, turn
from tests.server.test_serve_cli import free_port, serve, wait_until_up
from threadline.pydantic_ai import ServedAgent
from threadline.server import create_app
from threadline.storage import SQLiteStore


def client(tmp_path: Path) -> httpx.AsyncClient:
    app = create_app(SQLiteStore(tmp_path / 'served.db'), ServedAgent(_served_app.support), keys=None)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url='http://127.0.0.1')


async def test_a_pydantic_ai_agent_answers_both_protocols_and_its_turns_are_stored(tmp_path: Path) -> None:
    async with client(tmp_path) as http:
        first = await http.post('/api/chat', json=turn('hello'))
        text = ''.join(c.get('delta', '') for c in chunks(first) if c['type'] == 'text-delta')
        assert text == 'Hello from pydantic-ai.' and chunks(first)[-1]['type'] == 'finish'
        await http.post('/api/chat', json=turn('and again'))
        stored = (await http.get('/api/conversations/chat-1')).json()
        assert [m['role'] for m in stored['messages']] == ['system', 'user', 'assistant', 'user', 'assistant']
        audit = await http.get('/api/conversations/chat-1/audit')
        assert audit.status_code == 200 and audit.json()['gates'][0]['passed']
        body: dict[str, Any] = {
            'threadId': 'thread-9',
            'runId': 'run-1',
            'messages': [{'id': 'u', 'role': 'user', 'content': 'hello'}],
            'state': None,
            'tools': [],
            'context': [],
            'forwardedProps': None,
        }
        response = await http.post('/api/ag-ui', json=body)
        kinds = [json.loads(line[6:])['type'] for line in response.text.split('\n\n') if line.startswith('data: ')]
        assert kinds[0] == 'RUN_STARTED' and kinds[-1] == 'RUN_FINISHED' and 'MESSAGES_SNAPSHOT' in kinds


async def test_an_approval_is_announced_and_resumes_the_pydantic_ai_run(tmp_path: Path) -> None:
    _served_app.REFUNDED.clear()
    async with client(tmp_path) as http:
        paused = await http.post('/api/chat', json=turn('refund order 7'))
        asks = [c for c in chunks(paused) if c['type'] == 'data-approval-requested']
        assert asks == [
            {'type': 'data-approval-requested', 'data': {'toolCallId': 'call-refund', 'toolName': 'refund'}}
        ]
        assert _served_app.REFUNDED == []
        resumed = await http.post('/api/conversations/chat-1/approvals', json={'approvals': {'call-refund': True}})
        assert resumed.status_code == 200 and 'Refunded.' in resumed.text
        assert _served_app.REFUNDED == [7]
        again = await http.post('/api/conversations/chat-1/approvals', json={'approvals': {'call-refund': True}})
        assert again.status_code == 400 and _served_app.REFUNDED == [7]  # never run twice


def test_threadline_serve_agent_serves_a_pydantic_ai_agent(tmp_path: Path) -> None:
    port = free_port()
    process = serve(tmp_path, '--agent', 'tests.pydantic_ai._served_app:support', '--port', str(port))
    url = f'http://127.0.0.1:{port}'
    try:
        wait_until_up(url, process)
        response = httpx.post(url + '/api/chat', json=turn('hello'), timeout=30)
        text = ''.join(c.get('delta', '') for c in chunks(response) if c['type'] == 'text-delta')
        assert response.status_code == 200 and text == 'Hello from pydantic-ai.'
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_a_bad_agent_spec_is_named(tmp_path: Path) -> None:
    for spec, said in (('nocolon', 'MODULE:ATTR'), ('tests.pydantic_ai._served_app:REFUNDED', 'not a Threadline')):
        process = serve(tmp_path, '--agent', spec, '--port', str(free_port()))
        _, err = process.communicate(timeout=60)
        assert process.returncode != 0 and said in err
