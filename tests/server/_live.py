"""A live server for tests that drive it with real clients: uvicorn in a thread over a SQLite store,
one API key (`key-a`, scope `tenant-a`), and an agent whose answers are numbered."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from tests.server.test_serve_cli import free_port
from threadline import Agent
from threadline.messages import ModelMessage, ModelResponse, TextPart, UserPromptPart
from threadline.models.function import AgentInfo, FunctionModel
from threadline.server import create_app
from threadline.storage import AsyncStore, SQLiteStore, SyncStore


def numbered() -> Agent[None, str]:
    """Answers `answer N to <prompt>`, N counting every answer, so a regenerate reads differently."""
    answers = iter(range(1, 100))

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked = [p.content for p in messages[-1].parts if isinstance(p, UserPromptPart)]
        return ModelResponse(parts=[TextPart(f'answer {next(answers)} to {asked[-1]}')])

    return Agent(FunctionModel(model))


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """`app` under uvicorn in a thread, until the block ends; yields its base URL once it answers."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host='127.0.0.1', port=port, log_level='warning'))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f'http://127.0.0.1:{port}'
    for _ in range(100):
        try:
            if httpx.get(f'{url}/healthz', timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.05)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, AsyncStore[SyncStore]]]:
    store = SQLiteStore(tmp_path / 'chat.db')
    try:
        with serving(create_app(store, numbered(), keys={'key-a': 'tenant-a'})) as url:
            yield url, store
    finally:
        store.close()
