"""What the server refuses, and how: cross-site pages, rebinding hosts, endless bodies, input that
deserves a 400 naming the field, a turn queue with no end, an approval beside a plain tool call."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.test_app import JSON, chunks, client, turn
from threadline import Agent
from threadline.exceptions import TurnBusy
from threadline.models.demo import DemoModel
from threadline.server import create_app
from threadline.server._turns import TurnGate
from threadline.storage import MemoryStore, SQLiteStore


async def test_a_cross_site_page_cannot_post_or_approve(tmp_path: Path) -> None:
    async with client(tmp_path, keys=None) as http:
        plain = await http.post('/api/chat', content=json.dumps(turn('hi')), headers={'content-type': 'text/plain'})
        assert plain.status_code == 415
        elsewhere = {'origin': 'https://evil.example', **JSON}
        assert (await http.post('/api/chat', json=turn('hi'), headers=elsewhere)).status_code == 403
        approve = await http.post(
            '/api/conversations/chat-1/approvals', json={'approvals': {'x': True}}, headers=elsewhere
        )
        assert approve.status_code == 403
        fetch = {'sec-fetch-site': 'cross-site'}
        assert (await http.get('/api/conversations', headers=fetch)).status_code == 403
        same = await http.post('/api/chat', json=turn('hi'), headers={'origin': 'http://127.0.0.1'})
        assert same.status_code == 200  # the page the server serves itself
        assert (await http.get('/api/conversations')).json()['conversations']  # curl: no Origin, passes


async def test_a_dns_rebinding_host_is_refused_in_dev_mode(tmp_path: Path) -> None:
    async with client(tmp_path, keys=None) as http:
        await http.post('/api/chat', json=turn('private'))
        rebound = await http.get('/api/conversations', headers={'host': 'attacker.example:8000'})
        assert rebound.status_code == 403 and 'private' not in rebound.text
        assert (await http.get('/', headers={'host': 'attacker.example'})).status_code == 403
        assert (await http.get('/api/conversations', headers={'host': 'localhost:8000'})).status_code == 200
    store = SQLiteStore(tmp_path / 'named.db')
    app = create_app(store, Agent(DemoModel()), keys=None, allowed_hosts=['chat.example.com'])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url='http://chat.example.com') as named:
        assert (await named.get('/api/conversations')).status_code == 200
        assert (await named.get('/api/conversations', headers={'host': '127.0.0.1'})).status_code == 403


async def _send(app: Any, body_chunks: int, chunk: bytes) -> tuple[int, int]:
    """POST a chunked body straight through ASGI; (status, bytes the app pulled)."""
    pulled, status = 0, 0

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        if pulled >= body_chunks * len(chunk):
            return {'type': 'http.request', 'body': b'', 'more_body': False}
        pulled += len(chunk)
        return {'type': 'http.request', 'body': chunk, 'more_body': True}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message['type'] == 'http.response.start':
            status = message['status']

    scope = {
        'type': 'http',
        'asgi': {'version': '3.0'},
        'http_version': '1.1',
        'method': 'POST',
        'scheme': 'http',
        'path': '/api/chat',
        'raw_path': b'/api/chat',
        'query_string': b'',
        'root_path': '',
        'headers': [
            (b'host', b'127.0.0.1'),
            (b'content-type', b'application/json'),
            (b'transfer-encoding', b'chunked'),
        ],
        'client': ('127.0.0.1', 1),
        'server': ('127.0.0.1', 8000),
    }
    await app(scope, receive, send)
    return status, pulled


async def test_a_chunked_body_is_cut_off_at_the_limit(tmp_path: Path) -> None:
    app = create_app(SQLiteStore(tmp_path / 'c.db'), Agent(DemoModel()), keys=None, max_body=100_000)
    status, pulled = await _send(app, body_chunks=10_000, chunk=b' ' * 65_536)  # 655 MB if read whole
    assert status == 413 and pulled <= 100_000 + 65_536


@pytest.mark.parametrize(
    ('case', 'where'),
    [
        ('deep', 'nests deeper'),
        ('nul id', 'id:'),
        ('newline id', 'id:'),
        ('long id', 'id:'),
        ('superscript limit', 'limit:'),
        ('bad data url', 'messages[0].parts[0]'),
        ('null part type', 'messages[0].parts[0]'),
        ('lone surrogate', 'lone surrogate'),
        ('tag echoed', 'messages[0].parts[0]'),
    ],
)
async def test_bad_input_is_a_400_that_names_where_not_what(tmp_path: Path, case: str, where: str) -> None:
    async with client(tmp_path, keys=None) as http:
        request: dict[str, Any] = {'method': 'POST', 'url': '/api/chat', 'headers': JSON}
        body = turn('hi')
        part = body['messages'][0]['parts'][0]
        if case == 'deep':
            request['content'] = '{"id":"c","messages":' + '[' * 1000 + ']' * 1000 + '}'
        elif case.endswith(' id'):
            body['id'] = {'nul id': 'a\x00b', 'newline id': 'a\nb', 'long id': 'x' * 600}[case]
        elif case == 'superscript limit':
            request = {'method': 'GET', 'url': '/api/conversations?limit=²'}
        elif case == 'bad data url':
            body['messages'][0]['parts'] = [
                {'type': 'file', 'mediaType': 'image/png', 'url': 'data:image/png;base64,!!!'}
            ]
        elif case == 'null part type':
            part['type'] = None
        elif case == 'lone surrogate':
            request['content'] = json.dumps(turn('hi')).replace('"hi"', '"\\ud800"')
        elif case == 'tag echoed':
            part['type'] = 'card 4111-1111'
        if 'content' not in request and request['method'] == 'POST':
            request['content'] = json.dumps(body)
        response = await http.request(**request)
        assert response.status_code == 400, (case, response.text)
        assert where in response.json()['error'], (case, response.json())
        assert '4111' not in response.text


async def test_a_turn_waiting_on_this_server_is_refused_after_the_wait() -> None:
    gate = TurnGate(MemoryStore(), wait=0.2)
    leave = await gate.enter('s', 'c')
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(TurnBusy, match=r'within 0\.2 s'):
        await gate.enter('s', 'c')
    assert loop.time() - started < 2
    await leave()
    again = await gate.enter('s', 'c')  # the refused waiter left nothing behind
    await again()


async def test_an_approval_is_given_when_the_same_response_also_called_a_plain_tool(tmp_path: Path) -> None:
    from threadline.agent import DeferredToolRequests
    from threadline.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from threadline.models.function import FunctionModel

    def model(messages: list[Any], info: Any) -> ModelResponse:
        returned = {p.tool_name for m in messages for p in getattr(m, 'parts', []) if isinstance(p, ToolReturnPart)}
        if 'refund' in returned:
            return ModelResponse(parts=[TextPart('Refunded.')])
        return ModelResponse(
            parts=[
                ToolCallPart('lookup', {'order': 7}, 'call-lookup'),
                ToolCallPart('refund', {'order': 7}, 'call-refund'),
            ]
        )

    agent: Agent[None, Any] = Agent(FunctionModel(model), output_type=[str, DeferredToolRequests])
    refunded: list[int] = []

    @agent.tool_plain
    def lookup(order: int) -> str:
        return f'order {order}: paid'

    @agent.tool_plain(requires_approval=True)
    def refund(order: int) -> str:
        refunded.append(order)
        return f'refunded {order}'

    app = create_app(SQLiteStore(tmp_path / 'p.db'), agent, keys=None)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url='http://127.0.0.1') as http:
        paused = await http.post('/api/chat', json=turn('refund order 7'))
        assert [c['data']['toolCallId'] for c in chunks(paused) if c['type'] == 'data-approval-requested'] == [
            'call-refund'
        ]
        plain = await http.post('/api/conversations/chat-1/approvals', json={'approvals': {'call-lookup': True}})
        assert plain.status_code == 400  # it already ran: not pending
        resumed = await http.post('/api/conversations/chat-1/approvals', json={'approvals': {'call-refund': True}})
        assert resumed.status_code == 200 and 'Refunded.' in resumed.text and refunded == [7]
