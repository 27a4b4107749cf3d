"""Part (d) of `storage.py`: search over a store of a million messages, scoped and store-wide, in
several languages, against the harness's ConversationSearch on the same queries."""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from _languages import EMOJI, LANGUAGES, localize

from threadline import ModelMessagesTypeAdapter as OurTA
from threadline.storage import SQLiteStore


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def part_d(wl: Any, directory: Path, conversations: int, postgres: str | None = None) -> None:
    backend = 'PostgreSQL tsvector' if postgres else 'SQLite FTS5'
    print(f'(d) search over {conversations} conversations x 1,000 messages ({backend})')
    path = directory / 'search.db'
    store: Any
    if postgres:
        from threadline.storage import PostgresStore

        store = PostgresStore(postgres)
    else:
        store = SQLiteStore(path, synchronous='NORMAL')
    vocab = wl.vocabulary()
    start = time.perf_counter()
    built = 0
    flat: dict[int, float] = {}
    stages = sorted({min(s, conversations) for s in (50, 200, conversations)})
    for stage in stages:
        for k in range(built, stage):
            history = localize(wl.history(1000, seed=k, conversation_id=f'c{k}'), k)
            store.sync.append(f'c{k}', OurTA.validate_python(history), scope='bench')
        built = stage
        # The store's side of issue 15 §5: the ten most frequent words, scoped to one 1k-message
        # conversation, as the store grows around it (GC on, median of 5 rounds, p50 per round).
        rounds = []
        for _ in range(5):
            times = []
            for q in vocab[:10]:
                t0 = time.perf_counter()
                store.sync.search(q, scope='bench', conversation_id='c1', limit=10)
                times.append(time.perf_counter() - t0)
            rounds.append(percentile(times, 0.5))
        flat[stage] = statistics.median(rounds)
        print(f'    {stage * 1000:>9,} messages: scoped top-10 word p50 {flat[stage] * 1e3:6.2f} ms')
    if len(flat) > 1:
        print(
            f'    scoped frequent-word growth {stages[-1] * 1000:,} / {stages[0] * 1000:,} messages: '
            f'{flat[stages[-1]] / flat[stages[0]]:.2f}x (target < 1.3)'
        )
    size = f', {path.stat().st_size / 1e9:.2f} GB' if not postgres else ''
    print(f'    built in {time.perf_counter() - start:.0f} s{size}')
    rng = random.Random(7)
    singles = [vocab[rng.randrange(100, 10_000)] for _ in range(100)]
    doubles = [f'{vocab[rng.randrange(100, 10_000)]} {vocab[rng.randrange(100, 10_000)]}' for _ in range(50)]
    frequent = vocab[:10]
    ko, ja, zh = (LANGUAGES[lang]['words'] for lang in ('ko', 'ja', 'zh'))
    # (queries, the conversation a scoped query searches: one written in that language)
    kinds = {
        'single': (singles, 'c1'),
        'two-term': (doubles, 'c1'),
        'top-10': (frequent, 'c1'),
        'ko top': (ko[:5], 'c0'),  # 환불 (two syllables) is in about 70% of Korean messages
        'ko rare': ([ko[r] for r in (100, 400, 1000, 2000)], 'c0'),
        'ko phrase': (['환불을', '"환불 요청"', '주문 환불'], 'c0'),
        'ja': ([*ja[:4], ja[300]], 'c7'),
        'zh': ([*zh[:4], zh[300]], 'c14'),
        'emoji': (EMOJI, 'c0'),
    }
    passes = ['right after the build (each query once)']
    if postgres:  # the first read of a freshly loaded page sets its hint bits; autovacuum would too
        passes.append('at rest (after VACUUM ANALYZE, as autovacuum leaves a loaded table)')
    for index, state in enumerate(passes):
        if index:
            import psycopg

            with psycopg.connect(postgres, autocommit=True) as conn:
                conn.execute('VACUUM (ANALYZE) messages')
        print(f'    {state}:')
        for kind, (queries, scoped) in kinds.items():
            for label, conv in (('store-wide', None), ('scoped', scoped)):
                times = []
                for q in queries:
                    t0 = time.perf_counter()
                    store.sync.search(q, scope='bench', conversation_id=conv, limit=10)
                    times.append(time.perf_counter() - t0)
                print(
                    f'    {kind:>8} {label:>10}: p50 {percentile(times, 0.5) * 1e3:7.2f} ms  '
                    f'p95 {percentile(times, 0.95) * 1e3:7.2f} ms'
                )
    store.close()
    if not postgres:
        harness_search(wl, directory, singles, doubles)


def fresh_schema(url: str) -> str:
    """`url` with its public schema emptied (the bench database is scratch, as the tests' is)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute('DROP SCHEMA IF EXISTS public CASCADE')
        conn.execute('CREATE SCHEMA public')
    return url


def harness_search(wl: Any, directory: Path, singles: list[str], doubles: list[str]) -> None:
    from recall import harness_toolset

    ours = SQLiteStore(directory / 'search-10k.db')
    for k in range(10):
        ours.sync.append(
            f'c{k}', OurTA.validate_python(wl.history(1000, seed=k, conversation_id=f'c{k}')), scope='bench'
        )
    toolset = harness_toolset(wl, 10_000, directory)
    ctx = SimpleNamespace(conversation_id='c1')
    theirs, mine = [], []
    for q in singles + doubles:
        t0 = time.perf_counter()
        asyncio.run(toolset.search_conversation_history(ctx, q))
        theirs.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ours.sync.search(q, scope='bench', limit=10)
        mine.append(time.perf_counter() - t0)
    print(
        f'    harness ConversationSearch over 10k messages: p50 {percentile(theirs, 0.5) * 1e3:.1f} ms, '
        f'p95 {percentile(theirs, 0.95) * 1e3:.1f} ms; threadline on the same 10k: p50 {percentile(mine, 0.5) * 1e3:.2f} ms, '
        f'p95 {percentile(mine, 0.95) * 1e3:.2f} ms; p50 ratio {percentile(theirs, 0.5) / percentile(mine, 0.5):.0f}x'
    )
