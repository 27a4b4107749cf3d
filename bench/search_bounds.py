"""Search cost at its worst: the queries a user or an attacker can send, at 20,000 messages.

Before the bounds a query of 1,000 emoji took 11-31 s on SQLite and over 90 s on PostgreSQL, and
three of them delayed another tenant's chat turn from 0.26 s to 43 s (issue 35). Now a query past
the term or gram caps is refused at once, and the worst query within them is what this prints:
p50/p95 of each kind (GC on, interleaved rounds), and the latency of another tenant's append while
three worst-case searches run beside it, against the same append with nothing beside it. Then the
same through a real `threadline serve` process (SQLite): another tenant's whole chat turn, alone
and while three clients of the searching tenant send the worst query as fast as they can.

    uv run python bench/search_bounds.py [--postgres URL] [--messages 20000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import workload
from _languages import localize

from threadline import ModelMessagesTypeAdapter
from threadline.exceptions import SearchQueryTooLarge
from threadline.messages import ModelRequest, UserPromptPart
from threadline.storage import SQLiteStore, SyncStore
from threadline.storage.index import MAX_GRAM_CHARS, MAX_PHRASE_WORDS, MAX_TERMS


def queries(vocab: list[str]) -> dict[str, list[str]]:
    return {
        'ordinary words': vocab[:5],
        'phrases': [f'"{vocab[i]} {vocab[i + 1]}"' for i in range(5)],
        'prefixes': [vocab[i][:3] + '*' for i in range(5)],
        'CJK': ['환불', '返金', '退款', '환불을 요청', '返金をお願いします'],
        'a few emoji': ['😀', '😀 🎉', '🎉'],
        f'worst within caps ({MAX_TERMS} frequent words)': [' '.join(vocab[:MAX_TERMS])],
        f'worst within caps ({MAX_PHRASE_WORDS} emoji in a row)': ['😀' * MAX_PHRASE_WORDS],
        f'worst within caps ({MAX_GRAM_CHARS} CJK in a row)': ['返' * MAX_GRAM_CHARS],
        'past the caps (1,000 emoji)': ['😀' * 1000],
    }


def timed(store: SyncStore, query: str) -> tuple[float, str]:
    start = time.perf_counter()
    try:
        store.search(query, scope='bench', limit=10)
        outcome = 'ok'
    except SearchQueryTooLarge:
        outcome = 'refused'
    return time.perf_counter() - start, outcome


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def append_latency(store: SyncStore, rounds: int, beside: str | None) -> float:
    """Median time of one append in another scope, with three `beside` searches running."""
    stop = threading.Event()

    def hammer() -> None:
        while not stop.is_set():
            timed(store, beside or '')

    threads = [threading.Thread(target=hammer) for _ in range(3)] if beside else []
    for t in threads:
        t.start()
    times = []
    for k in range(rounds):
        start = time.perf_counter()
        store.append(f'other-{k}', [ModelRequest(parts=[UserPromptPart('hello')])], scope='other-tenant')
        times.append(time.perf_counter() - start)
    stop.set()
    for t in threads:
        t.join()
    return statistics.median(times)


def chat_turn_latency(db: Path, worst: str, rounds: int = 20) -> tuple[float, float]:
    """Median seconds of one chat turn of tenant A through `threadline serve`, alone and while three
    clients of tenant `bench` search for `worst` without pause."""
    import asyncio
    import os
    import socket
    import subprocess

    import httpx

    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    env = {**os.environ, 'THREADLINE_API_KEYS': 'key-a=chat-tenant,key-b=bench', 'THREADLINE_HOME': str(db.parent)}
    server = subprocess.Popen(
        [sys.executable, '-m', 'threadline.cli', 'serve', '--db', str(db), '--port', str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f'http://127.0.0.1:{port}'

    async def measure() -> tuple[float, float]:
        async with httpx.AsyncClient(base_url=url, timeout=120) as http:
            for _ in range(200):
                try:
                    if (await http.get('/healthz')).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)

            async def turns(tag: str) -> float:
                times = []
                for k in range(rounds):
                    body = {
                        'id': f'{tag}-{k}',
                        'messages': [{'id': 'u', 'role': 'user', 'parts': [{'type': 'text', 'text': 'hello'}]}],
                    }
                    start = time.perf_counter()
                    response = await http.post('/api/chat', json=body, headers={'x-api-key': 'key-a'})
                    assert response.status_code == 200, response.text
                    times.append(time.perf_counter() - start)
                return statistics.median(times)

            alone = await turns('alone')
            stop = asyncio.Event()

            async def search() -> None:
                while not stop.is_set():
                    await http.get('/api/conversations', params={'q': worst}, headers={'x-api-key': 'key-b'})

            searchers = [asyncio.create_task(search()) for _ in range(3)]
            await asyncio.sleep(0.5)
            beside = await turns('beside')
            stop.set()
            await asyncio.gather(*searchers)
            return alone, beside

    try:
        return asyncio.run(measure())
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--postgres')
    parser.add_argument('--messages', type=int, default=20_000)
    args = parser.parse_args()
    wl = workload()
    directory = Path(tempfile.mkdtemp())
    store: Any
    if args.postgres:
        from threadline.storage import PostgresStore

        store = PostgresStore(args.postgres)
    else:
        store = SQLiteStore(directory / 'bounds.db', synchronous='NORMAL')
    for k in range(args.messages // 1000):
        history = localize(wl.history(1000, seed=k, conversation_id=f'c{k}'), k)
        store.sync.append(f'c{k}', ModelMessagesTypeAdapter.validate_python(history), scope='bench')
    kinds = queries(wl.vocabulary())
    times: dict[str, list[float]] = {kind: [] for kind in kinds}
    outcomes: dict[str, set[str]] = {kind: set() for kind in kinds}
    for _ in range(5):  # interleaved rounds
        for kind, qs in kinds.items():
            for q in qs:
                seconds, outcome = timed(store.sync, q)
                times[kind].append(seconds)
                outcomes[kind].add(outcome)
    backend = 'PostgreSQL' if args.postgres else 'SQLite'
    print(f'search at {args.messages:,} messages ({backend}), GC on, 5 interleaved rounds')
    for kind, values in times.items():
        print(
            f'  {kind:<42} p50 {p(values, 0.5) * 1e3:8.2f} ms  p95 {p(values, 0.95) * 1e3:8.2f} ms  {"/".join(sorted(outcomes[kind]))}'
        )
    worst = max((k for k in kinds if 'within' in k), key=lambda k: p(times[k], 0.95))
    alone = append_latency(store.sync, 50, None)
    beside = append_latency(store.sync, 50, kinds[worst][0])
    print(
        f'  another tenant\'s append: {alone * 1e3:.2f} ms alone, {beside * 1e3:.2f} ms beside 3 x "{worst}"'
        f' ({beside / alone:.1f}x)'
    )
    store.close()
    if not args.postgres:
        turn_alone, turn_beside = chat_turn_latency(directory / 'bounds.db', kinds[worst][0])
        print(
            f"  another tenant's chat turn through `threadline serve`: {turn_alone * 1e3:.1f} ms alone, "
            f'{turn_beside * 1e3:.1f} ms beside 3 clients sending "{worst}" ({turn_beside / turn_alone:.1f}x)'
        )


if __name__ == '__main__':
    main()
