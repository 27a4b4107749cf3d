"""Recall: the model's search tool, Threadline's ConversationSearch against pydantic-ai-harness's.

    uv run python bench/recall.py [--sizes 10000,100000]

For N stored messages (the shared workload, N/1,000 conversations of 1,000 messages, one scope),
each side answers the same queries as its tool would for a model: Threadline's
`ConversationSearch` tool function (store search, filters, the bounded answer) and the harness's
`search_conversation_history` (which rebuilds its BM25 corpus from every snapshot on each call).
Queries: 10 single words of ranks 100..10,000, 5 two-word queries and the 5 most frequent words.
GC on; Threadline: median of every query; the harness: median of the first 3 queries (one call
takes about a second per 10k messages). The 1M-message figures are in `bench/storage.py` (d).

Memory: a notebook of 10 KB and of 1 MB in SQLite on both sides (our store's notebook table,
the harness's `SqliteMemoryStore`): a read, and a compare-and-set write of one more line; GC on,
median of 21. The excerpt Threadline injects (read, cut to 2,000 characters, framed) is timed on
its own: the harness builds its injected block inside its capability, which is not comparable.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from _common import workload

from threadline import ModelMessagesTypeAdapter as OurTA
from threadline.search import ConversationSearch
from threadline.storage import SQLiteStore


def queries(wl: Any) -> list[str]:
    vocab = wl.vocabulary()
    rng = random.Random(11)
    singles = [vocab[rng.randrange(100, 10_000)] for _ in range(10)]
    doubles = [f'{vocab[rng.randrange(100, 10_000)]} {vocab[rng.randrange(100, 10_000)]}' for _ in range(5)]
    return singles + doubles + vocab[:5]


def ours(wl: Any, size: int, directory: Path, asked: list[str]) -> list[float]:
    store = SQLiteStore(directory / f'ours-{size}.db', synchronous='NORMAL')
    for k in range(size // 1000):
        messages = OurTA.validate_python(wl.history(1000, seed=k, conversation_id=f'c{k}'))
        store.sync.append(f'c{k}', messages, scope='bench')
    capability = ConversationSearch(store, scope='bench', reach='scope')
    tool = capability.get_toolset().tools['search_conversation']
    ctx = SimpleNamespace(conversation_id='c1', run_id='bench-run', deps=None)
    times = []
    for query in asked:
        start = time.perf_counter()
        asyncio.run(tool.function(ctx, query))
        times.append(time.perf_counter() - start)
    store.close()
    return times


def harness_toolset(wl: Any, size: int, directory: Path) -> Any:
    """pydantic-ai-harness's search toolset over `size` messages stored as run snapshots."""
    from pydantic_ai import ModelMessagesTypeAdapter as RefTA
    from pydantic_ai_harness.conversation_search import SnapshotHistorySource
    from pydantic_ai_harness.conversation_search._toolset import ConversationSearchToolset
    from pydantic_ai_harness.step_persistence import ContinuableSnapshot, SqliteStepStore
    from pydantic_ai_harness.step_persistence import RunRecord as HarnessRun

    harness = SqliteStepStore(database=directory / f'harness-{size}.db')
    now = datetime.now(tz=UTC)

    async def fill() -> None:
        for k in range(size // 1000):
            messages = RefTA.validate_python(wl.history(1000, seed=k, conversation_id=f'c{k}'))
            await harness.register_run(HarnessRun(run_id=f'r{k}', conversation_id=f'c{k}', started_at=now))
            snapshot = ContinuableSnapshot(
                run_id=f'r{k}', step_index=1, messages=messages, conversation_id=f'c{k}', timestamp=now
            )
            await harness.save_snapshot(snapshot)

    asyncio.run(fill())
    return ConversationSearchToolset(
        SnapshotHistorySource(harness),
        tool_id='s',
        max_matches=10,
        context_lines=1,
        bm25_k1=1.5,
        bm25_b=0.75,
        scope='all',
    )


def theirs(wl: Any, size: int, directory: Path, asked: list[str]) -> list[float]:
    toolset = harness_toolset(wl, size, directory)
    ctx = SimpleNamespace(conversation_id='c1', run_id='bench-run')
    times = []
    for query in asked[:3]:
        start = time.perf_counter()
        asyncio.run(toolset.search_conversation_history(ctx, query))
        times.append(time.perf_counter() - start)
    return times


def notebook_text(size: int) -> str:
    rng = random.Random(size)
    words = ['seat', 'window', 'vegetarian', 'refund', 'invoice', 'prefers', 'monday', 'parcel']
    out, n = [], 0
    while n < size:
        section = f'## note {len(out)}\n' + ' '.join(rng.choice(words) for _ in range(40)) + '\n'
        out.append(section)
        n += len(section)
    return ''.join(out)


def memory_rows(directory: Path) -> None:
    from pydantic_ai_harness.memory import SqliteMemoryStore

    from threadline.memory._notebook import excerpt
    from threadline.messages.framing import neutralize

    print('notebook read and write (SQLite, median of 21)')
    for size in (10_000, 1_000_000):
        text = notebook_text(size)
        ours = SQLiteStore(directory / f'notebook-{size}.db')
        ours.sync.write_notebook('alice', text, scope='bench', expected_version=0)
        theirs = SqliteMemoryStore(database=directory / f'harness-notebook-{size}.db')
        written = asyncio.run(theirs.write('alice/main/MEMORY.md', text, expected_version=None))
        version = [written.version]

        # Both sides through their async face, one event loop per call (as a tool call meets them).
        def our_read() -> None:
            asyncio.run(ours.read_notebook('alice', scope='bench'))

        def our_write() -> None:
            async def write() -> None:
                notebook = await ours.read_notebook('alice', scope='bench')
                assert notebook is not None
                content, expected = notebook.content + 'x\n', notebook.version
                await ours.write_notebook('alice', content, scope='bench', expected_version=expected)

            asyncio.run(write())

        def their_read() -> None:
            asyncio.run(theirs.read('alice/main/MEMORY.md', max_chars=2 * size))

        def their_write() -> None:
            async def write() -> None:
                current = await theirs.read('alice/main/MEMORY.md', max_chars=2 * size)
                assert current is not None
                result = await theirs.write(
                    'alice/main/MEMORY.md', current.content + 'x\n', expected_version=current.version
                )
                version[0] = result.version

            asyncio.run(write())

        def our_excerpt() -> None:
            notebook = ours.sync.read_notebook('alice', scope='bench')
            assert notebook is not None
            neutralize(excerpt(notebook.content, 2_000))

        t = {
            name: _median(fn)
            for name, fn in (
                ('r', our_read),
                ('w', our_write),
                ('hr', their_read),
                ('hw', their_write),
                ('x', our_excerpt),
            )
        }
        print(
            f'  {size // 1000:>5} KB: read {t["r"] * 1e3:6.2f} ms vs {t["hr"] * 1e3:6.2f} ms ({t["hr"] / t["r"]:4.1f}x)   '
            f'write {t["w"] * 1e3:6.2f} ms vs {t["hw"] * 1e3:6.2f} ms ({t["hw"] / t["w"]:4.1f}x)   '
            f'threadline excerpt {t["x"] * 1e3:6.2f} ms'
        )
        ours.close()


def _median(fn: Any) -> float:
    times = []
    for _ in range(21):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--sizes', default='10000,100000')
    parser.add_argument('--skip-search', action='store_true')
    args = parser.parse_args()
    wl = workload()
    asked = queries(wl)
    print('search tool latency per call (SQLite), Threadline ConversationSearch vs pydantic-ai-harness')
    with tempfile.TemporaryDirectory() as tmp:
        memory_rows(Path(tmp))
        for size in (int(s) for s in args.sizes.split(',') if not args.skip_search):
            mine = ours(wl, size, Path(tmp), asked)
            other = theirs(wl, size, Path(tmp), asked)
            ordered = sorted(mine)
            p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
            print(
                f'  {size:>7,} messages: threadline p50 {statistics.median(mine) * 1e3:7.2f} ms  p95 {p95 * 1e3:7.2f} ms'
                f'   harness p50 {statistics.median(other) * 1e3:9.1f} ms   ratio {statistics.median(other) / statistics.median(mine):6.0f}x'
            )


if __name__ == '__main__':
    main()
