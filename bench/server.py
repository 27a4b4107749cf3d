"""The chat server under load, and its per-request overhead against pydantic-ai's own adapter.

    uv run python bench/server.py [--clients 50] [--turns 20]

(a) Load (loopback only; stops by itself): `threadline serve`'s app under uvicorn on 127.0.0.1 with
    a SQLite store and the offline demo model; `--clients` concurrent clients each send `--turns`
    turns of their own conversation to `POST /api/chat` (server-held history: each turn sends only
    itself) and read the whole stream. Reported: p50/p95 of a turn's wall time, turns per second,
    and the number of failed turns (a non-200, or an error chunk).
(b) Framework overhead per streamed request, like for like: one Vercel AI chat request over the
    ASGI interface (httpx's transport, no sockets) to our app and to pydantic-ai 2.62's
    `VercelAIAdapter.dispatch_request` in a Starlette route, both with a model that answers at
    once with the same text. Ours loads the conversation from an in-memory store and saves the
    turn; pydantic-ai's holds no history (the client sends it). Median of interleaved runs, GC on.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

TEXT = 'It is sunny in Paris.'


def turn(chat: str, text: str) -> dict[str, Any]:
    return {'id': chat, 'messages': [{'id': text, 'role': 'user', 'parts': [{'type': 'text', 'text': text}]}]}


def failed(response: httpx.Response) -> bool:
    return response.status_code != 200 or '"type":"error"' in response.text


async def load(clients: int, turns: int) -> None:
    import uvicorn

    from threadline import Agent
    from threadline.models.demo import DemoModel
    from threadline.server import create_app
    from threadline.storage import SQLiteStore

    directory = Path(tempfile.mkdtemp())
    app = create_app(SQLiteStore(directory / 'load.db'), Agent(DemoModel()), keys=None)
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host='127.0.0.1', port=port, log_level='error'))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        await asyncio.sleep(0.05)
    times: list[float] = []
    errors = 0

    async def client(k: int, http: httpx.AsyncClient) -> None:
        nonlocal errors
        for t in range(turns):
            start = time.perf_counter()
            response = await http.post(f'http://127.0.0.1:{port}/api/chat', json=turn(f'load-{k}', f'turn {t} of {k}'))
            times.append(time.perf_counter() - start)
            errors += failed(response)

    limits = httpx.Limits(max_connections=clients)
    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        await asyncio.gather(*(client(k, http) for k in range(clients)))
    elapsed = time.perf_counter() - started
    server.should_exit = True
    thread.join(timeout=10)
    times.sort()
    print(f'(a) {clients} clients x {turns} turns on 127.0.0.1 (uvicorn, SQLite, demo model)')
    print(
        f'    per turn p50 {statistics.median(times) * 1e3:.1f} ms  p95 {times[int(len(times) * 0.95)] * 1e3:.1f} ms  '
        f'{len(times) / elapsed:.0f} turns/s  errors {errors}'
    )


def ours_app() -> Any:
    from threadline import Agent
    from threadline.messages import ModelResponse, TextPart
    from threadline.models.function import FunctionModel
    from threadline.server import create_app
    from threadline.storage import MemoryStore

    return create_app(
        MemoryStore(), Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart(TEXT)]))), keys=None
    )


def reference_app() -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.ui.vercel_ai import VercelAIAdapter
    from starlette.applications import Starlette
    from starlette.routing import Route

    async def stream(messages: Any, info: Any) -> Any:
        yield TEXT

    agent = Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart(TEXT)]), stream_function=stream))

    async def chat(request: Any) -> Any:
        return await VercelAIAdapter.dispatch_request(request, agent=agent)

    return Starlette(routes=[Route('/api/chat', chat, methods=['POST'])])


async def overhead(repeat: int) -> None:
    sides = {'ours': ours_app(), 'ref': reference_app()}
    clients = {
        name: httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url='http://t')
        for name, app in sides.items()
    }
    times: dict[str, list[float]] = {'ours': [], 'ref': []}
    body = {**turn('c', 'hello'), 'trigger': 'submit-message'}
    for name in sides:  # warm up
        response = await clients[name].post('/api/chat', json={**body, 'id': f'warm-{name}'})
        assert response.status_code == 200 and TEXT in response.text, (name, response.text[:300])
    for k in range(repeat):
        for name in ('ours', 'ref') if k % 2 == 0 else ('ref', 'ours'):
            start = time.perf_counter()
            response = await clients[name].post('/api/chat', json={**body, 'id': f'{name}-{k}'})
            times[name].append(time.perf_counter() - start)
            assert response.status_code == 200
    for client in clients.values():
        await client.aclose()
    ours, ref = statistics.median(times['ours']), statistics.median(times['ref'])
    print(f'(b) one streamed Vercel AI request over ASGI, median of {repeat} interleaved (GC on)')
    print(f'    threadline {ours * 1e3:.2f} ms  pydantic-ai {ref * 1e3:.2f} ms  ours / theirs {ours / ref:.2f}')


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--clients', type=int, default=50)
    parser.add_argument('--turns', type=int, default=20)
    parser.add_argument('--repeat', type=int, default=201)
    args = parser.parse_args()
    asyncio.run(load(args.clients, args.turns))
    asyncio.run(overhead(args.repeat))


if __name__ == '__main__':
    main()
