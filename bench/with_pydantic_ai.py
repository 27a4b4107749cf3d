"""One pydantic-ai Agent, three ways: no persistence, pydantic-ai-harness's StepPersistence
(SqliteStepStore) and Threadline's (`threadline.pydantic_ai.StepPersistence` on a SQLiteStore).

Prints, at 10, 10,000 and 20,000 messages of the shared workload, the time one tool-calling turn
adds (medians of interleaved runs, GC on: the turn without persistence, then with Threadline's,
then with the harness's, round by round). Threadline's is the wall time inside its hooks, timed
directly, beside the same for Threadline's own `Agent` and StepPersistence: pydantic-ai's own run
takes 0.2-0.5 s at these lengths and varies by more than the hooks cost, so a with-minus-without
difference cannot see them. The harness's is that difference (it is seconds). Then the database size
after `--turns` turns from an empty conversation (also the harness's StepPersistence on `HarnessStepStore`); then the bridge alone: converting a 10,000-message
history each way, against pydantic-ai's own `dump_json` + `validate_json`, and the per-hook cost of
the incremental view at 20,000 messages.

    uv run python bench/with_pydantic_ai.py [--turns 1000] [--rounds 7] [--harness-rounds 3] [--only turns|size|bridge]

(Not `bench/pydantic_ai.py`: a script's folder comes first on the path, so a file of that name
would stand in for the package when the other scripts here import it.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import workload
from _step_bench import _timed_hooks

SIZES = (10, 10_000, 20_000)


def _turn_agent(library: Any, wl: Any, index: int, capabilities: list[Any]) -> tuple[Any, str]:
    """An agent of `library` (pydantic-ai's or Threadline's: the same names) that plays turn
    `index` of the workload: a tool call, then an answer."""
    turn = library.ModelMessagesTypeAdapter.validate_python(wl.turn(index, conversation_id='c'))
    responses = iter([turn[1], turn[3]])
    agent = library.Agent(library.FunctionModel(lambda messages, info: next(responses)), capabilities=capabilities)

    @agent.tool_plain(name=turn[1].parts[-1].tool_name)
    def _tool(query: str, limit: int) -> str:
        return str(turn[2].parts[0].content)

    return agent, str(turn[0].parts[-1].content)


def their_turn_agent(wl: Any, index: int, capabilities: list[Any]) -> tuple[Any, str]:
    import pydantic_ai
    from pydantic_ai.models.function import FunctionModel

    return _turn_agent(
        _Library(pydantic_ai.Agent, pydantic_ai.ModelMessagesTypeAdapter, FunctionModel), wl, index, capabilities
    )


def our_turn_agent(wl: Any, index: int, capabilities: list[Any]) -> tuple[Any, str]:
    import threadline
    from threadline.models.function import FunctionModel

    return _turn_agent(
        _Library(threadline.Agent, threadline.ModelMessagesTypeAdapter, FunctionModel), wl, index, capabilities
    )


class _Library(NamedTuple):
    Agent: Any
    ModelMessagesTypeAdapter: Any
    FunctionModel: Any


class Side:
    """One way of running the turn, with the history it continues (each side keeps its own)."""

    def __init__(self, name: str, history: list[Any], make: Any, capability: Any) -> None:
        self.name, self.history, self.make, self.capability = name, history, make, capability
        self.times: list[float] = []

    def run(self, wl: Any, index: int, keep: bool) -> float:
        """One turn: the time inside the capability's hooks when they are timed, else the run's."""
        agent, prompt = self.make(wl, index, [self.capability] if self.capability is not None else [])
        timed = self.capability is not None and hasattr(self.capability, 'spent')
        if timed:
            self.capability.spent = 0.0
        start = time.perf_counter()
        result = agent.run_sync(prompt, message_history=self.history, conversation_id='c')
        elapsed = time.perf_counter() - start
        if keep:
            self.history = result.all_messages()
        return float(self.capability.spent) if timed else elapsed


def per_turn(wl: Any, size: int, directory: Path, rounds: int, harness_rounds: int) -> dict[str, float]:
    from pydantic_ai import ModelMessagesTypeAdapter as TheirTA
    from pydantic_ai_harness.step_persistence import SqliteStepStore
    from pydantic_ai_harness.step_persistence import StepPersistence as HarnessStepPersistence

    from threadline import ModelMessagesTypeAdapter as OurTA
    from threadline.pydantic_ai import StepPersistence, from_pydantic_ai, load_history
    from threadline.storage import SQLiteStore
    from threadline.storage import StepPersistence as OurStepPersistence

    theirs = TheirTA.validate_python(wl.history(size, conversation_id='c'))
    ours_store = SQLiteStore(directory / f'threadline-{size}.db')
    ours_store.sync.append('c', from_pydantic_ai(theirs), scope='bench')
    own_store = SQLiteStore(directory / f'own-{size}.db')
    own_store.sync.append('c', OurTA.validate_python(wl.history(size, conversation_id='c')), scope='bench')
    harness_store = SqliteStepStore(database=directory / f'harness-{size}.db')
    sides = {
        'none': Side('none', theirs, their_turn_agent, None),
        # As a user continues a stored conversation: its history from `load_history`.
        'threadline': Side(
            'threadline',
            load_history(ours_store, 'c', scope='bench').messages,
            their_turn_agent,
            _timed_hooks(StepPersistence(ours_store, scope='bench')),
        ),
        'harness': Side('harness', theirs, their_turn_agent, HarnessStepPersistence(harness_store)),
        'own none': Side('own none', own_store.sync.load('c', scope='bench').messages, our_turn_agent, None),
        'own': Side('own', own_store.sync.load('c', scope='bench').messages, our_turn_agent, None),
    }
    sides['own'].capability = _timed_hooks(OurStepPersistence(own_store, scope='bench'))
    sides['harness'].run(wl, size // 4, keep=True)  # the harness stores the whole history once first
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for k in range(rounds):
        index = size // 4 + 1 + k
        for name, side in sides.items():
            if name == 'harness' and k >= harness_rounds:
                continue
            # The sides with persistence continue what they stored; the others rerun one history.
            samples[name].append(side.run(wl, index, keep=side.capability is not None))
    ours_store.close()
    own_store.close()
    median = {name: statistics.median(values) for name, values in samples.items() if values}
    return {
        'none': median['none'],
        'threadline': median['threadline'],
        'harness': median['harness'] - median['none'],
        'own': median['own'],
    }


def database_sizes(wl: Any, directory: Path, turns: int) -> tuple[int, int, int]:
    """Bytes on disk after `turns` turns: Threadline's StepPersistence, the harness's on its
    SqliteStepStore, and the harness's on Threadline's log (`HarnessStepStore`)."""
    from pydantic_ai_harness.step_persistence import SqliteStepStore
    from pydantic_ai_harness.step_persistence import StepPersistence as HarnessStepPersistence

    from threadline.pydantic_ai import HarnessStepStore, StepPersistence
    from threadline.storage import SQLiteStore

    paths = [directory / 'size-threadline.db', directory / 'size-harness.db', directory / 'size-harness-on-ours.db']
    ours_store, under_harness = SQLiteStore(paths[0]), SQLiteStore(paths[2])
    sides = [
        Side('threadline', [], their_turn_agent, StepPersistence(ours_store, scope='bench')),
        Side('harness', [], their_turn_agent, HarnessStepPersistence(SqliteStepStore(database=paths[1]))),
        Side(
            'harness on threadline',
            [],
            their_turn_agent,
            HarnessStepPersistence(HarnessStepStore(under_harness, scope='bench')),
        ),
    ]
    for index in range(turns):
        for side in sides:
            side.run(wl, index, keep=True)
    ours_store.close()
    under_harness.close()
    ours, theirs, theirs_on_ours = (_size(p) for p in paths)
    return ours, theirs, theirs_on_ours


def _size(path: Path) -> int:
    """The database's size with its write-ahead log folded in (each side's WAL checkpointed)."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.execute('PRAGMA wal_checkpoint(TRUNCATE)')
    return sum(p.stat().st_size for p in path.parent.glob(path.name + '*'))


def bridge(wl: Any, rounds: int) -> None:
    from pydantic_ai import ModelMessagesTypeAdapter as TheirTA

    from threadline.pydantic_ai import from_pydantic_ai, to_pydantic_ai
    from threadline.pydantic_ai._view import RunView

    theirs = TheirTA.validate_python(wl.history(10_000, conversation_id='c'))
    ours = from_pydantic_ai(theirs)
    cases = {
        'pydantic-ai dump_json + validate_json': lambda: TheirTA.validate_json(TheirTA.dump_json(theirs)),
        'from_pydantic_ai': lambda: from_pydantic_ai(theirs),
        'to_pydantic_ai': lambda: to_pydantic_ai(ours),
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, case in cases.items():
            start = time.perf_counter()
            case()
            samples[name].append(time.perf_counter() - start)
    reference = statistics.median(samples['pydantic-ai dump_json + validate_json'])
    print('\nthe bridge, a 10,000-message history (medians of interleaved runs, GC on)')
    for name, values in samples.items():
        value = statistics.median(values)
        print(f'  {name:<40} {value * 1e3:8.1f} ms   {reference / value:5.1f}x faster than the JSON round trip')

    class Ctx:
        def __init__(self, messages: list[Any]) -> None:
            self.messages, self.run_id, self.conversation_id = messages, 'r', 'c'
            self.deps, self.usage, self.run_step, self.tool_call_id, self.tool_name, self.retry = (
                None,
                None,
                0,
                None,
                None,
                0,
            )

    for size in (10, 20_000):
        history = list(TheirTA.validate_python(wl.history(size, conversation_id='c')))
        view = RunView(Ctx(history), None)  # type: ignore[arg-type]
        view.sync(Ctx(history))  # type: ignore[arg-type]
        extra = TheirTA.validate_python(wl.turn(size, conversation_id='c'))
        times = []
        for message in extra:
            history.append(message)
            start = time.perf_counter()
            view.sync(Ctx(history))  # type: ignore[arg-type]
            times.append(time.perf_counter() - start)
        print(
            f'  one hook of the view at {size:>6,} messages: {statistics.median(times) * 1e6:7.1f} µs (median of a turn)'
        )


def turns_table(wl: Any, directory: Path, rounds: int, harness_rounds: int) -> None:
    print('added time per tool-calling turn of a pydantic-ai Agent (medians of interleaved runs, GC on)')
    print(
        f'  {"messages":>8} {"turn, none":>12} {"threadline":>12} {"harness":>12} {"ratio":>8} {"own Agent":>12} {"vs own":>7}'
    )
    for size in SIZES:
        figures = per_turn(wl, size, directory, rounds, harness_rounds)
        ratio = figures['harness'] / figures['threadline'] if figures['threadline'] > 0 else float('nan')
        versus = figures['threadline'] / figures['own'] if figures['own'] > 0 else float('nan')
        print(
            f'  {size:>8,} {figures["none"] * 1e3:9.1f} ms {figures["threadline"] * 1e3:9.2f} ms '
            f'{figures["harness"] * 1e3:9.1f} ms {ratio:7.0f}x {figures["own"] * 1e3:9.2f} ms {versus:6.2f}x'
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--turns', type=int, default=1000)
    parser.add_argument('--rounds', type=int, default=7)
    parser.add_argument('--harness-rounds', type=int, default=3)
    parser.add_argument('--only', choices=['turns', 'size', 'bridge'], default=None)
    args = parser.parse_args()
    wl = workload()
    directory = Path(tempfile.mkdtemp())
    if args.only in (None, 'turns'):
        turns_table(wl, directory, args.rounds, args.harness_rounds)
    if args.only in (None, 'size'):
        ours, theirs, on_ours = database_sizes(wl, directory, args.turns)
        print(
            f'\ndatabase after {args.turns:,} turns from an empty conversation: threadline {ours / 1e6:.2f} MB, '
            f"harness {theirs / 1e6:.2f} MB ({theirs / ours:.1f}x); the harness's StepPersistence on "
            f'HarnessStepStore {on_ours / 1e6:.2f} MB ({theirs / on_ours:.1f}x smaller than on its own store)'
        )
    if args.only in (None, 'bridge'):
        bridge(wl, args.rounds)


if __name__ == '__main__':
    main()
