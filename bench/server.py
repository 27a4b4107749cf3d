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
(c) The same, for one more turn of a continued conversation of 20, 200 and 1,000 messages: the
    client-held sides send the history with the turn (UI messages; ours in stateless mode also the
    signed history and its envelope), the server-held ones only the turn. `--parts` picks parts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import tempfile
import threading
import time
from datetime import timedelta
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


BENCH_KEY = b'bench-key-' * 4


def ours_app(store: str = 'memory', *, stateless: bool = False, backend: Any = None) -> Any:
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
    if backend is None:
        backend = MemoryStore() if store == 'memory' else SQLiteStore(Path(tempfile.mkdtemp()) / 'overhead.db')
    keys = Keyring.single(BENCH_KEY) if stateless else None
    # Stateless bodies carry the history: 1,000 messages pass the default 1 MB limit.
    return create_app(backend, Agent(model), keys=None, stateless=keys, max_body=50_000_000)


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
        name: httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url='http://127.0.0.1')
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


CONTINUED = (20, 200, 1000)
"""Lengths of the continued conversations (c) measures a turn of."""


def continued_bodies(size: int) -> dict[str, tuple[str, dict[str, Any]]]:
    """Per side, (endpoint, body) of one more turn of a conversation of `size` messages, as each
    side's client sends it: the client-held sides send the whole history (UI messages; ours in
    stateless mode also the signed history and its envelope), the server-held ones only the turn."""
    from _common import workload

    from threadline import ModelMessagesTypeAdapter
    from threadline.trust import Keyring, sign_history
    from threadline.ui.ag_ui import AGUIAdapter
    from threadline.ui.vercel_ai import VercelAIAdapter

    history = ModelMessagesTypeAdapter.validate_python(workload().history(size, conversation_id=f'c{size}'))
    ui = [m.model_dump(mode='json', by_alias=True, exclude_none=True) for m in VercelAIAdapter.dump_messages(history)]
    new = {'id': 'new', 'role': 'user', 'parts': [{'type': 'text', 'text': 'And next?'}]}
    vercel = {'id': f'c{size}', 'messages': [*ui, new], 'trigger': 'submit-message'}
    envelope = sign_history(
        history,
        conversation_id=f'c{size}',
        scope='local',
        keys=Keyring.single(BENCH_KEY),
        expires_in=timedelta(hours=1),
    )
    wire = ModelMessagesTypeAdapter.dump_python(history, mode='json')
    stateless = {**vercel, 'history': wire, 'envelope': json.loads(envelope.to_json())}
    agui = [m.model_dump(mode='json', by_alias=True, exclude_none=True) for m in AGUIAdapter.dump_messages(history)]
    agui_body = {**ag_ui_body(f'c{size}'), 'messages': [*agui, {'id': 'new', 'role': 'user', 'content': 'And next?'}]}
    held_agui = ag_ui_body(f'c{size}')
    return {
        'floor': ('/api/chat', vercel),
        'ref': ('/api/chat', vercel),
        'stateless': ('/api/chat', stateless),
        'held-mem': ('/api/chat', {**turn(f'c{size}', 'And next?'), 'trigger': 'submit-message'}),
        'ref-agui': ('/api/ag-ui', agui_body),
        'agui-client': ('/api/ag-ui', agui_body),
        'agui-mem': ('/api/ag-ui', {**held_agui, 'messages': [{'id': 'new', 'role': 'user', 'content': 'And next?'}]}),
    }


async def continued(repeat: int) -> None:
    """(c): one more turn of a conversation of 20, 200 and 1,000 messages, both protocols and both
    modes, beside the transport floor; server-held conversations are stored first (and grow by
    one turn per repetition, as a conversation does)."""
    from threadline import ModelMessagesTypeAdapter
    from threadline.storage import MemoryStore

    print(f'(c) one more turn of a continued conversation, median of {repeat} interleaved (first side rotating)')
    print(f'    {"side":55s} ' + ''.join(f'{n:>9} msgs' for n in CONTINUED))
    rows: dict[str, list[float]] = {}
    for size in CONTINUED:
        from _common import workload

        store = MemoryStore()
        for chat in (f'c{size}',):
            raw = workload().history(size, conversation_id=chat)
            store.sync.append(chat, ModelMessagesTypeAdapter.validate_python(raw), scope='local')
        apps = {
            'floor': floor_app(),
            'ref': reference_app(),
            'stateless': ours_app(stateless=True),
            'held-mem': ours_app(backend=store),
            'ref-agui': reference_app(),
            'agui-client': ours_ag_ui_client_held(),
            'agui-mem': ours_app(backend=store),
        }
        bodies = {
            name: (endpoint, json.dumps(body).encode()) for name, (endpoint, body) in continued_bodies(size).items()
        }
        clients = {
            n: httpx.AsyncClient(transport=httpx.ASGITransport(app=a), base_url='http://127.0.0.1')
            for n, a in apps.items()
        }
        headers = {'content-type': 'application/json'}

        async def once(name: str) -> float:
            endpoint, body = bodies[name]
            start = time.perf_counter()
            response = await clients[name].post(endpoint, content=body, headers=headers)
            elapsed = time.perf_counter() - start
            assert response.status_code == 200 and (name == 'floor' or TEXT in response.text), (
                name,
                response.text[:300],
            )
            return elapsed

        names = list(apps)
        for name in names:
            await once(name)  # warm up
        samples: dict[str, list[float]] = {name: [] for name in names}
        for k in range(repeat):
            for name in names[k % len(names) :] + names[: k % len(names)]:
                samples[name].append(await once(name))
        for client in clients.values():
            await client.aclose()
        for name in names:
            rows.setdefault(name, []).append(statistics.median(samples[name]))
    labels = {name: label for name, (_, _, label) in SIDES.items()}
    for name, values in rows.items():
        print(f'    {labels[name]:55s} ' + ''.join(f'{v * 1e3:10.2f} ms' for v in values))
    for ours_name, ref_name in (
        ('stateless', 'ref'),
        ('agui-client', 'ref-agui'),
        ('held-mem', 'ref'),
        ('agui-mem', 'ref-agui'),
    ):
        ratios = [
            (rows[ref_name][i] - rows['floor'][i]) / (rows[ours_name][i] - rows['floor'][i])
            for i in range(len(CONTINUED))
        ]
        print(
            f'    {ours_name} vs {ref_name}, overhead ratio (pydantic-ai / ours): '
            + '  '.join(f'{r:.1f}x' for r in ratios)
        )


def main() -> None:
    from _common import print_load_average

    print_load_average()
    parser = argparse.ArgumentParser()
    parser.add_argument('--clients', type=int, default=50)
    parser.add_argument('--turns', type=int, default=20)
    parser.add_argument('--repeat', type=int, default=201)
    parser.add_argument('--continued-repeat', type=int, default=21)
    parser.add_argument('--parts', default='a,b,c')
    args = parser.parse_args()
    parts = set(args.parts.split(','))
    if 'a' in parts:
        asyncio.run(load(args.clients, args.turns))
    if 'b' in parts:
        asyncio.run(overhead(args.repeat))
    if 'c' in parts:
        asyncio.run(continued(args.continued_repeat))


if __name__ == '__main__':
    main()
