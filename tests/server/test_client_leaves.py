"""A client that leaves mid-turn stops the run: the server's turn reads `run_stream_events()`,
whose run goes on in a background task until it is read to its end or closed, so the server
closes it when the response stream ends early (uvicorn, a real HTTP client)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from tests.server._live import serving
from threadline import Agent
from threadline.messages import ModelMessage
from threadline.models.function import AgentInfo, FunctionModel
from threadline.server import create_app
from threadline.storage import SQLiteStore


def test_a_client_that_leaves_mid_turn_stops_the_model(tmp_path: Path) -> None:
    started, stopped = threading.Event(), threading.Event()

    async def endless(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        try:
            yield 'first words'
            started.set()
            for _ in range(600):  # a minute of tokens, unless the turn is stopped
                await asyncio.sleep(0.1)
                yield ' more'
        finally:
            stopped.set()

    store = SQLiteStore(tmp_path / 'chat.db')
    app = create_app(store, Agent(FunctionModel(stream_function=endless)), keys={'key-a': 'tenant-a'})
    try:
        with serving(app) as url:
            turn = {
                'id': 'chat-1',
                'messages': [{'id': 'u', 'role': 'user', 'parts': [{'type': 'text', 'text': 'go'}]}],
            }
            with httpx.stream(
                'POST', f'{url}/api/chat', json=turn, headers={'x-api-key': 'key-a'}, timeout=10
            ) as reply:
                assert reply.status_code == 200
                next(reply.iter_bytes())
                assert started.wait(5)
            assert stopped.wait(10), 'the run went on after its client left'
    finally:
        store.close()
