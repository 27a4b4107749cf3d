"""The chat server under load, and its per-request overhead against pydantic-ai's own adapter.

    uv run python bench/server.py [--clients 50] [--turns 20]

(a) Load (loopback only; stops by itself): `threadline serve`'s app under uvicorn on 127.0.0.1 with
    a SQLite store and the offline demo model; `--clients` concurrent clients each send `--turns`
    turns of their own conversation to `POST /api/chat` (server-held history: each turn sends only
    itself) and read the whole stream. Reported: p50/p95 of a turn's wall time, turns per second,
    and the number of failed turns (a non-200, or an error chunk).
(b) Framework overhead per streamed request: one chat request over the ASGI interface (httpx's
    transport, no sockets), both sides with a model that streams the same text at once, to
    pydantic-ai 2.62's `VercelAIAdapter` / `AGUIAdapter.dispatch_request` in a Starlette route and
    to our app. Overhead is a side's median minus the transport floor (a route that streams fixed
    frames). Like for like is our `--stateless` mode: as with pydantic-ai's adapter the client
    holds the history (ours also verifies and signs its envelope). Server-held mode (the default)
    does more, a store load and save per turn, and is printed beside it, labelled, on an
    in-memory store and on a SQLite file (whose save waits for the disk). Medians of interleaved
    runs, GC on.
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


def ours_app(store: str = 'memory', *, stateless: bool = False) -> Any:
    """Our app with a model that streams the same text as the reference's (no worker thread)."""
    from threadline import Agent
    from threadline.messages import ModelResponse, TextPart
    from threadline.models.function import FunctionModel
    from threadline.server import create_app
    from threadline.storage import MemoryStore, SQLiteStore
    from threadline.trust import Keyring

    async def stream(messages: Any, info: Any) -> Any:
        yield TEXT

    model = FunctionModel(lambda m, i: ModelResponse(parts=[TextPart(TEXT)]), stream_function=stream)
    backend = MemoryStore() if store == 'memory' else SQLiteStore(Path(tempfile.mkdtemp()) / 'overhead.db')
    keys = Keyring.single(b'bench-key-' * 4) if stateless else None
    return create_app(backend, Agent(model), keys=None, stateless=keys)


def ours_ag_ui_client_held() -> Any:
    """Our AG-UI adapter the way pydantic-ai's `dispatch_request` works: the client's messages are
    the history (sanitized on load), the run's events are encoded as AG-UI frames. Built from the
    public `threadline.ui.ag_ui` API, no store."""
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    from threadline import Agent
    from threadline.messages import ModelResponse, TextPart
    from threadline.models.function import FunctionModel
    from threadline.ui.ag_ui import AGUIAdapter, ag_ui_events, encode

    async def stream(messages: Any, info: Any) -> Any:
        yield TEXT

    agent = Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart(TEXT)]), stream_function=stream))

    async def ag_ui(request: Any) -> Any:
        body = await request.json()
        history = AGUIAdapter.load_messages(body['messages'])
        events = agent.run_stream_events(message_history=history, conversation_id=body['threadId'])

        async def frames() -> Any:
            async for event in ag_ui_events(events, thread_id=body['threadId'], run_id=body['runId']):
                yield encode(event)

        return StreamingResponse(frames(), media_type='text/event-stream')

    return Starlette(routes=[Route('/api/ag-ui', ag_ui, methods=['POST'])])


def reference_app() -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.ui.ag_ui import AGUIAdapter
    from pydantic_ai.ui.vercel_ai import VercelAIAdapter
    from starlette.applications import Starlette
    from starlette.routing import Route

    async def stream(messages: Any, info: Any) -> Any:
        yield TEXT

    agent = Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart(TEXT)]), stream_function=stream))

    async def chat(request: Any) -> Any:
        return await VercelAIAdapter.dispatch_request(request, agent=agent)

    async def ag_ui(request: Any) -> Any:
        return await AGUIAdapter.dispatch_request(request, agent=agent)

    return Starlette(routes=[Route('/api/chat', chat, methods=['POST']), Route('/api/ag-ui', ag_ui, methods=['POST'])])


def floor_app() -> Any:
    """The transport's own cost: a route that reads the body and streams six fixed SSE frames."""
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def chat(request: Any) -> Any:
        await request.body()

        async def frames() -> Any:
            for _ in range(6):
                yield 'data: {"type":"text-delta","id":"t","delta":"x"}\n\n'

        return StreamingResponse(frames(), media_type='text/event-stream')

    return Starlette(routes=[Route('/api/chat', chat, methods=['POST']), Route('/api/ag-ui', chat, methods=['POST'])])


def ag_ui_body(thread: str) -> dict[str, Any]:
    return {
        'threadId': thread,
        'runId': f'run-{thread}',
        'messages': [{'id': 'u1', 'role': 'user', 'content': 'hello'}],
        'state': None,
        'tools': [],
        'context': [],
        'forwardedProps': None,
    }


SIDES = {
    # name: (app factory, endpoint, what it is)
    'floor': (floor_app, '/api/chat', 'transport floor: fixed SSE, no framework'),
    'ref': (reference_app, '/api/chat', 'pydantic-ai VercelAIAdapter (client holds the history)'),
    'stateless': (lambda: ours_app(stateless=True), '/api/chat', 'ours --stateless (client holds it, signed)'),
    'held-mem': (ours_app, '/api/chat', 'ours server-held, MemoryStore (+load, +save)'),
    'held-sqlite': (lambda: ours_app('sqlite'), '/api/chat', 'ours server-held, SQLite file (+load, +durable save)'),
    'ref-agui': (reference_app, '/api/ag-ui', 'pydantic-ai AGUIAdapter (client holds the history)'),
    'agui-client': (ours_ag_ui_client_held, '/api/ag-ui', 'ours AGUIAdapter, client holds it (like for like)'),
    'agui-mem': (ours_app, '/api/ag-ui', 'ours AG-UI endpoint, server-held, MemoryStore'),
}


async def overhead(repeat: int) -> None:
    apps = {name: factory() for name, (factory, _, _) in SIDES.items()}
    clients = {
        name: httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url='http://t')
        for name, app in apps.items()
    }

    async def once(name: str, key: str) -> float:
        endpoint = SIDES[name][1]
        body = ag_ui_body(key) if endpoint == '/api/ag-ui' else {**turn(key, 'hello'), 'trigger': 'submit-message'}
        start = time.perf_counter()
        response = await clients[name].post(endpoint, json=body)
        elapsed = time.perf_counter() - start
        assert response.status_code == 200 and (name == 'floor' or TEXT in response.text), (name, response.text[:300])
        return elapsed

    times: dict[str, list[float]] = {name: [] for name in SIDES}
    for name in SIDES:
        await once(name, f'warm-{name}')
    order = list(SIDES)
    for k in range(repeat):
        for name in order if k % 2 == 0 else order[::-1]:  # interleaved, alternating direction
            times[name].append(await once(name, f'{name}-{k}'))
    for client in clients.values():
        await client.aclose()
    median = {name: statistics.median(values) for name, values in times.items()}
    over = {name: median[name] - median['floor'] for name in SIDES}
    print(f'(b) one streamed request over ASGI (no sockets), median of {repeat} interleaved, GC on')
    print("    overhead = median - the transport floor; ratio = our overhead / pydantic-ai's on that protocol")
    for name, (_, _, label) in SIDES.items():
        ref = over['ref-agui' if name.startswith('agui') else 'ref']
        ratio = '' if name in ('floor', 'ref', 'ref-agui') else f'  ratio {over[name] / ref:.2f}'
        print(f'    {label:55s} {median[name] * 1e3:6.2f} ms  overhead {over[name] * 1e3:5.2f} ms{ratio}')
    print('    like for like: `stateless` against VercelAIAdapter, `agui-client` against AGUIAdapter (the client')
    print('    holds the history on both sides); server-held rows also load and save the turn in a store.')


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
