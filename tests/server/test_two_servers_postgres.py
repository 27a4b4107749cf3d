"""Past one machine: two `threadline serve` processes on one PostgreSQL database serve interleaved
turns of the same conversations, with nothing lost or duplicated."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path

import httpx
import pytest

from tests.server.test_serve_cli import free_port, serve, wait_until_up

POSTGRES = os.environ.get('THREADLINE_TEST_POSTGRES_URL')
pytestmark = pytest.mark.skipif(
    not POSTGRES, reason='THREADLINE_TEST_POSTGRES_URL is not set (CI sets it; export it to run PostgreSQL tests)'
)


def turn(chat: str, text: str) -> dict[str, object]:
    return {'id': chat, 'messages': [{'id': text, 'role': 'user', 'parts': [{'type': 'text', 'text': text}]}]}


async def send(http: httpx.AsyncClient, url: str, chat: str, text: str) -> None:
    """One turn; a turn that meets another server's turn of the same conversation waits for it (the
    store's turn lease), so it goes through the first time."""
    response = await http.post(url + '/api/chat', json=turn(chat, text), headers={'x-api-key': 'k1'}, timeout=60)
    assert response.status_code == 200, response.text
    errors = [json.loads(line[6:]) for line in response.text.split('\n\n') if '"type":"error"' in line]
    assert errors == [], errors


async def test_two_servers_one_database(tmp_path: Path) -> None:
    env = {'THREADLINE_API_KEYS': 'k1=tenant-two-servers'}
    ports = [free_port(), free_port()]
    processes = [serve(tmp_path, '--port', str(p), '--db', str(POSTGRES), env=env) for p in ports]
    urls = [f'http://127.0.0.1:{p}' for p in ports]
    try:
        for url, process in zip(urls, processes, strict=True):
            wait_until_up(url, process)
        chats = [f'two-servers-{uuid.uuid4().hex[:8]}' for _ in range(3)]
        async with httpx.AsyncClient() as http:
            # Each conversation gets turns from both servers, some of them at the same moment.
            for round_ in range(4):
                await asyncio.gather(
                    *(
                        send(http, urls[(round_ + k) % 2], chat, f'{chat} turn {round_} via {k}')
                        for k, chat in enumerate(chats)
                    ),
                    *(
                        send(http, urls[(round_ + k + 1) % 2], chat, f'{chat} extra {round_}')
                        for k, chat in enumerate(chats)
                    ),
                )
            for chat in chats:
                stored = (await http.get(urls[0] + f'/api/conversations/{chat}', headers={'x-api-key': 'k1'})).json()
                users = [p['text'] for m in stored['messages'] if m['role'] == 'user' for p in m['parts']]
                assert len(users) == 8 and len(set(users)) == 8, users  # each turn exactly once
                roles = [m['role'] for m in stored['messages']]
                assert roles == ['user', 'assistant'] * 8  # every turn answered, none interleaved
    finally:
        for process in processes:
            process.terminate()
            process.communicate(timeout=30)
