"""Stateless mode: envelopes expire, AG-UI is refused (it would need kept history), and user turns
a client appends after the signed history are sanitized like any other client turn."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from tests.server.test_app import KEYS, threadline_chunk, turn
from threadline import Agent
from threadline.messages import ModelMessagesTypeAdapter, ModelRequest, ModelResponse, TextPart
from threadline.models.function import AgentInfo, FunctionModel
from threadline.server import create_app
from threadline.storage import SQLiteStore
from threadline.trust import Envelope, Keyring, sign_history, verify_history

ALICE = {'x-api-key': 'key-alice'}
KEYRING = Keyring.single(b'k' * 32)


def app_client(tmp_path: Path, agent: Agent[None, Any] | None = None, **options: Any) -> httpx.AsyncClient:
    from threadline.models.demo import DemoModel

    store = SQLiteStore(tmp_path / 'unused.db')
    app = create_app(store, agent or Agent(DemoModel()), keys=KEYS, stateless=KEYRING, **options)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url='http://127.0.0.1')


async def test_an_expired_or_unexpiring_envelope_is_refused(tmp_path: Path) -> None:
    async with app_client(tmp_path, envelope_ttl=60) as http:
        held = threadline_chunk(await http.post('/api/chat', json=turn('hello'), headers=ALICE))
        envelope = Envelope.from_json(json.dumps(held['envelope']))
        assert envelope.expires_at is not None and envelope.issued_at is not None
        assert envelope.expires_at - envelope.issued_at == 60
        history = ModelMessagesTypeAdapter.validate_python(held['history'])
        for stale in (
            sign_history(
                history,
                conversation_id='chat-1',
                scope='tenant-a',
                keys=KEYRING,
                expires_in=timedelta(seconds=1),
                now=envelope_time(-3600),
            ),
            sign_history(history, conversation_id='chat-1', scope='tenant-a', keys=KEYRING),  # no expiry at all
        ):
            body = {**turn('again'), 'history': held['history'], 'envelope': json.loads(stale.to_json())}
            refused = await http.post('/api/chat', json=body, headers=ALICE)
            assert refused.status_code == 400 and refused.json()['error'] == 'UNTRUSTED_HISTORY: expired'
        fresh = await http.post('/api/chat', json={**turn('again'), **held}, headers=ALICE)
        assert fresh.status_code == 200


def envelope_time(offset: float) -> Any:
    from datetime import UTC, datetime

    return datetime.now(tz=UTC) + timedelta(seconds=offset)


def test_an_envelope_past_its_expiry_fails_verification_and_one_before_it_passes() -> None:
    history = [ModelRequest.user_text_prompt('hi'), ModelResponse(parts=[TextPart('hello')])]
    envelope = sign_history(history, conversation_id='c', scope='s', keys=KEYRING, expires_in=timedelta(minutes=5))
    ok = verify_history(history, envelope, conversation_id='c', scope='s', keys=KEYRING)
    late = verify_history(history, envelope, conversation_id='c', scope='s', keys=KEYRING, now=envelope_time(600))
    assert ok.ok and (late.ok, late.reason) == (False, 'expired')
    forged = Envelope.from_json(envelope.to_json().replace(str(envelope.expires_at).encode(), b'9999999999'))
    assert verify_history(history, forged, conversation_id='c', scope='s', keys=KEYRING).reason == 'bad_signature'


async def test_ag_ui_is_refused_on_a_stateless_server(tmp_path: Path) -> None:
    async with app_client(tmp_path) as http:
        body = {'threadId': 't', 'runId': 'r', 'messages': [{'id': 'u', 'role': 'user', 'content': 'hi'}]}
        response = await http.post('/api/ag-ui', json=body, headers=ALICE)
        assert response.status_code == 400 and 'stateless' in response.json()['error']
        assert (await http.get('/api/conversations', headers=ALICE)).json()['conversations'] == []


async def test_user_turns_appended_after_the_signed_history_are_sanitized(tmp_path: Path) -> None:
    seen: list[Any] = []

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart('ok')])

    async with app_client(tmp_path, Agent(FunctionModel(model))) as http:
        held = threadline_chunk(await http.post('/api/chat', json=turn('hello'), headers=ALICE))
        sneaky = {
            'kind': 'request',
            'parts': [
                {
                    'part_kind': 'user-prompt',
                    'content': ['look', {'kind': 'document-url', 'url': 'file:///etc/passwd', 'force_download': True}],
                }
            ],
        }
        body = {**turn('again'), 'history': [*held['history'], sneaky], 'envelope': held['envelope']}
        response = await http.post('/api/chat', json=body, headers=ALICE)
        assert response.status_code == 200
        assert 'file://' not in repr(seen[-1]) and 'look' in repr(seen[-1])
