"""Turns of one conversation sent to two servers sharing a store run in the order they arrived,
and a turn that waited too long leaves the line, so it never holds up the turns behind it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.server.test_app import chunks, turn
from tests.storage.conftest import fresh_postgres_url, needs_postgres
from threadline import Agent
from threadline.models.demo import DemoModel
from threadline.server import create_app
from threadline.storage import AsyncStore, FileStore, PostgresStore, SQLiteStore, SyncStore


def two_servers(backend: str, tmp_path: Path) -> list[AsyncStore[SyncStore]]:
    """Two store objects on one store, as two server processes would open it."""
    if backend == 'sqlite':
        return [SQLiteStore(tmp_path / 'shared.db') for _ in range(2)]
    if backend == 'file':
        return [FileStore(tmp_path / 'shared') for _ in range(2)]
    url = fresh_postgres_url()
    return [PostgresStore(url) for _ in range(2)]


def http_for(store: AsyncStore[SyncStore], **options: float) -> httpx.AsyncClient:
    app = create_app(store, Agent(DemoModel()), keys=None, **options)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url='http://127.0.0.1')


@pytest.mark.parametrize('backend', ['sqlite', 'file', pytest.param('postgres', marks=needs_postgres)])
async def test_turns_sent_to_two_servers_run_in_arrival_order(backend: str, tmp_path: Path) -> None:
    stores = two_servers(backend, tmp_path)
    servers = [http_for(store, turn_wait=30) for store in stores]
    # A turn is running somewhere (a third server); four more arrive, alternating between servers.
    assert await stores[0].claim_turn('chat-1', scope='local', holder='third-server', ttl=60)
    sent: list[asyncio.Task[httpx.Response]] = []
    for k, text in enumerate(['one', 'two', 'three', 'four']):
        sent.append(asyncio.create_task(servers[(k + 1) % 2].post('/api/chat', json=turn(text), timeout=60)))
        await asyncio.sleep(0.3)  # well apart, so their arrival order is not in doubt
    assert not any(task.done() for task in sent)
    await stores[0].release_turn('chat-1', scope='local', holder='third-server')
    for response in await asyncio.gather(*sent):
        assert response.status_code == 200 and not [c for c in chunks(response) if c['type'] == 'error']
    stored = (await servers[0].get('/api/conversations/chat-1')).json()
    users = [p['text'] for m in stored['messages'] if m['role'] == 'user' for p in m['parts']]
    assert users == ['one', 'two', 'three', 'four']
    for server in servers:
        await server.aclose()


async def test_a_refused_turn_leaves_the_line(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'line.db')
    async with http_for(store, turn_wait=0.3) as http:
        assert await store.claim_turn('chat-1', scope='local', holder='other-server', ttl=60)
        busy = await http.post('/api/chat', json=turn('too late'))
        assert busy.status_code == 409
        await store.release_turn('chat-1', scope='local', holder='other-server')
        # Had the refused turn kept its place, this newcomer would wait behind a ghost.
        assert await store.claim_turn('chat-1', scope='local', holder='newcomer', ttl=60)
