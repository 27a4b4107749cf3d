"""Conversation ids are never a client's to pick: a tenant's chat id names a conversation in that
tenant's own space, so another tenant can neither take it first nor learn that it exists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.server.test_app import KEYS, turn
from threadline import Agent
from threadline.messages import ModelResponse, TextPart
from threadline.models.function import AgentInfo, FunctionModel
from threadline.server import create_app
from threadline.storage import SQLiteStore

ALICE, BOB = {'x-api-key': 'key-alice'}, {'x-api-key': 'key-bob'}


async def test_a_chat_id_taken_by_another_tenant_is_still_yours(tmp_path: Path) -> None:
    calls: list[str] = []

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        calls.append('call')
        return ModelResponse(parts=[TextPart('ok')])

    store = SQLiteStore(tmp_path / 'ids.db')
    app = create_app(store, Agent(FunctionModel(model)), keys=KEYS)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url='http://127.0.0.1') as http:
        squat = await http.post('/api/chat', json=turn('mine first', 'shared'), headers=BOB)
        assert squat.status_code == 200
        mine = await http.post('/api/chat', json=turn('hello', 'shared'), headers=ALICE)
        assert mine.status_code == 200 and 'error' not in mine.text and len(calls) == 2
        alice = (await http.get('/api/conversations/shared', headers=ALICE)).json()
        bob = (await http.get('/api/conversations/shared', headers=BOB)).json()
        assert [p['text'] for m in alice['messages'] if m['role'] == 'user' for p in m['parts']] == ['hello']
        assert [p['text'] for m in bob['messages'] if m['role'] == 'user' for p in m['parts']] == ['mine first']
        listed = (await http.get('/api/conversations', headers=ALICE)).json()['conversations']
        assert [c['id'] for c in listed] == ['shared']  # the chat id, never the stored form
        hits = (await http.get('/api/conversations?q=hello', headers=ALICE)).json()['hits']
        assert [h['conversationId'] for h in hits] == ['shared']
        fork = (await http.post('/api/conversations/shared/fork', headers=ALICE)).json()['id']
        forked = await http.get(f'/api/conversations/{fork}', headers=ALICE)
        assert (
            forked.status_code == 200 and (await http.get(f'/api/conversations/{fork}', headers=BOB)).status_code == 404
        )
        assert len(calls) == 2


async def test_a_conversation_the_cli_stored_under_its_bare_id_is_found(tmp_path: Path) -> None:
    from threadline.messages import ModelRequest, UserPromptPart

    store = SQLiteStore(tmp_path / 'bare.db')
    store.sync.append('from-cli', [ModelRequest(parts=[UserPromptPart('stored by the CLI')])], scope='tenant-a')
    from threadline.models.demo import DemoModel

    app = create_app(store, Agent(DemoModel()), keys=KEYS)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url='http://127.0.0.1') as http:
        assert (await http.get('/api/conversations/from-cli', headers=ALICE)).status_code == 200
        assert (await http.get('/api/conversations/from-cli', headers=BOB)).status_code == 404
        assert [c['id'] for c in (await http.get('/api/conversations', headers=ALICE)).json()['conversations']] == [
            'from-cli'
        ]
