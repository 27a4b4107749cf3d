"""StepPersistence per turn, ours timed directly and the harness's as a paired difference, for
part (a) of `storage.py`; and the disk's floor under both (see that script's docstring)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC
from pathlib import Path
from typing import Any

from threadline import ModelMessagesTypeAdapter as OurTA
from threadline.storage import SQLiteStore

SIZES = (10, 1_000, 10_000, 20_000)


def harness_turn_overhead(wl: Any, size: int, directory: Path) -> float:
    """Harness StepPersistence: one-turn run time with persistence minus without, at `size` messages."""
    from pydantic_ai import Agent
    from pydantic_ai import ModelMessagesTypeAdapter as RefTA
    from pydantic_ai.messages import ModelResponse
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai_harness.step_persistence import SqliteStepStore, StepPersistence

    def run_once(history: list[Any], index: int, capabilities: list[Any]) -> float:
        turn = RefTA.validate_python(wl.turn(index, conversation_id='h'))
        responses = iter([turn[1], turn[3]])

        def model(messages: list[Any], info: Any) -> ModelResponse:
            return next(responses)

        agent = Agent(FunctionModel(model), capabilities=capabilities)
        tool = turn[1].parts[-1].tool_name

        @agent.tool_plain(name=tool)
        def _tool(query: str, limit: int) -> str:
            return turn[2].parts[0].content

        start = time.perf_counter()
        agent.run_sync(turn[0].parts[-1].content, message_history=history, conversation_id='h')
        return time.perf_counter() - start

    history = RefTA.validate_python(wl.history(size, conversation_id='h'))
    store = SqliteStepStore(database=directory / f'harness-{size}.db')
    run_once(history, size // 4, [StepPersistence(store)])  # first run stores the whole history
    with_persistence = statistics.median(
        run_once(history, size // 4 + k, [StepPersistence(store)]) for k in range(1, 3)
    )
    without = statistics.median(run_once(history, size // 4 + k, []) for k in range(3, 5))
    return max(with_persistence - without, 0.0)


class StepBench:
    """Threadline StepPersistence at one conversation length: one paired measurement per call of
    `round`, so the lengths can be measured round by round (the host's speed drifts over minutes,
    and a length measured minutes after another would compare the host, not the code). The model
    answers at once (`latency=0`, the worst case for writes that go behind a model request) or
    after `latency` seconds (any hosted model takes far longer)."""

    def __init__(self, wl: Any, size: int, directory: Path, latency: float = 0.0) -> None:
        self.wl, self.size, self.latency = wl, size, latency
        self.store = SQLiteStore(directory / f'ours-step-{size}-{latency}.db')
        seed_as_step_persistence(self.store, OurTA.validate_python(wl.history(size, conversation_id='o')), 'o')
        # The seed's writes are not synced; checkpoint them, or the first measured synced commit
        # would sync a thousand seeded pages with its own (a 10 ms outlier in the worst case).
        self.store.dialect.connection.execute('PRAGMA wal_checkpoint(TRUNCATE)')
        self.inside: list[float] = []
        self.differences: list[float] = []
        self.held: list[float] = []
        self.inside_hops: list[float] = []
        """Per turn, the longest single store operation run in the event loop's thread."""
        self._held_now = [0.0]
        for name in ('run_start', 'step_write'):
            setattr(self.store.sync, name, self._timed_in_loop(getattr(self.store.sync, name)))

    def _timed_in_loop(self, operation: Callable[..., Any]) -> Callable[..., Any]:
        """`operation`, noting how long it holds the event loop when it runs there."""

        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is not threading.main_thread():
                return operation(*args, **kwargs)
            start = time.perf_counter()
            try:
                return operation(*args, **kwargs)
            finally:
                self._held_now[0] = max(self._held_now[0], time.perf_counter() - start)

        return timed

    def run_once(self, index: int, capabilities: list[Any]) -> float:
        from threadline import Agent
        from threadline.messages import ModelResponse
        from threadline.models.function import FunctionModel

        turn = OurTA.validate_python(self.wl.turn(index, conversation_id='o'))
        responses = iter([turn[1], turn[3]])
        latency = self.latency

        async def model(messages: list[Any], info: Any) -> ModelResponse:
            if latency:
                await asyncio.sleep(latency)
            return next(responses)

        agent = Agent(FunctionModel(model), capabilities=capabilities)

        @agent.tool_plain(name=turn[1].parts[-1].tool_name)
        def _tool(query: str, limit: int) -> str:
            return str(turn[2].parts[0].content)

        current = self.store.sync.load('o', scope='bench')
        start = time.perf_counter()
        agent.run_sync(turn[0].parts[-1].content, message_history=current.messages, conversation_id='o')
        return time.perf_counter() - start

    def round(self, k: int) -> None:
        """One run without StepPersistence, then one with it: the time inside its hooks, and the
        difference of the two runs.

        Timed directly: the wall time the run spends inside StepPersistence's hooks (its store
        calls, thread hops and bookkeeping). A with-minus-without difference of whole runs was
        tried first: at 20k messages a run takes ~80 ms and varies by +-10 ms, which swamps a few
        ms. The paired difference is still kept, with its spread, as a cross-check."""
        from threadline.storage import StepPersistence

        base = self.size // 4 + 3 * k
        if self.latency and k % 2:
            self._round_with_hops(base + 2)
        without = self.run_once(base, [])
        persistence = _timed_hooks(StepPersistence(self.store, scope='bench'))
        self._held_now[0] = 0.0
        with_persistence = self.run_once(base + 1, [persistence])
        self.inside.append(persistence.spent)
        self.held.append(self._held_now[0])
        self.differences.append(with_persistence - without)
        if self.latency and not k % 2:
            self._round_with_hops(base + 2)

    def _round_with_hops(self, index: int) -> None:
        """The same turn with every store operation in a worker thread (the design before the
        waited ones moved into the event loop), for the comparison `part_a` prints."""
        from threadline.storage import StepPersistence

        self.store._uncontended = lambda: contextlib.nullcontext(False)  # type: ignore[method-assign]
        try:
            persistence = _timed_hooks(StepPersistence(self.store, scope='bench'))
            self.run_once(index, [persistence])
            self.inside_hops.append(persistence.spent)
        finally:
            del self.store._uncontended

    def finish(self) -> float:
        """The median time inside the hooks; with an instant model, also the write transactions
        and syncs of one more run (untimed: a trace callback on every statement slows the writes)
        and the paired difference."""
        from threadline.storage import StepPersistence

        if not self.latency:
            commits, syncs, mode, writing = [0], [0], ['FULL'], [False]

            def count(statement: str) -> None:
                text = statement.strip().upper()
                if text.startswith('PRAGMA SYNCHRONOUS='):
                    mode[0] = text.split('=', 1)[1]
                elif text.startswith('BEGIN'):
                    writing[0] = text == 'BEGIN IMMEDIATE'  # reads are BEGIN ... COMMIT too
                elif text.startswith('COMMIT') and writing[0]:
                    commits[0] += 1
                    syncs[0] += mode[0] == 'FULL'  # in WAL mode only a FULL commit waits for the disk

            self.store.dialect.connection.set_trace_callback(count)
            self.run_once(self.size // 4 + 3 * REPEAT, [StepPersistence(self.store, scope='bench')])
            self.store.dialect.connection.set_trace_callback(None)
            STEP_COMMITS[self.size] = (commits[0], syncs[0])
            differences = sorted(self.differences)
            STEP_PAIRED[self.size] = (
                statistics.median(differences),
                differences[len(differences) // 4],
                differences[-1 - len(differences) // 4],
            )
        self.store.close()
        if self.latency:
            STEP_HELD[self.size] = (statistics.median(self.held), max(self.held))
            STEP_HOPS[self.size] = statistics.median(self.inside_hops)
        return statistics.median(self.inside)


def ours_step_overheads(wl: Any, directory: Path, latency: float) -> dict[int, float]:
    """StepPersistence per turn at every size of `SIZES`, the sizes measured round by round."""
    benches = [StepBench(wl, size, directory, latency) for size in SIZES]
    for k in range(REPEAT):
        for bench in benches:
            bench.round(k)
        FLOORS.append(disk_floor(directory))  # interleaved: the disk's speed drifts as the code's does
    return {bench.size: bench.finish() for bench in benches}


def seed_as_step_persistence(store: Any, history: list[Any], conversation_id: str) -> None:
    """Store `history` as StepPersistence would have written it turn by turn: per four-message
    turn, four step writes with the run record, its events, snapshots and ledger row, so the
    indexes a run start and a step write touch are as large as a real conversation's. (A plain
    append of the same messages would leave the ledger, events and snapshots empty.)"""
    from datetime import datetime

    from threadline.storage import RunFinish, SnapshotMark, StepEvent, StepWrite, ToolEffect

    now = datetime.now(tz=UTC)
    kinds = (  # the events of each of a turn's four writes
        ('run_started', 'model_request_started'),
        ('model_request_completed', 'tool_call_started'),
        ('tool_call_completed',),
        ('model_request_started', 'model_request_completed', 'run_completed'),
    )
    revision = None
    for first in range(0, len(history), 4):
        run_id, call = f'seed-{first}', history[first + 1].parts[-1]
        started = ToolEffect(run_id, call.tool_call_id, call.tool_name, 'started', now)
        extras: list[dict[str, Any]] = [
            {'register': True},
            {'effects': [started]},
            {'effects': [replace(started, status='completed', ended_at=now)]},
            {'finish': RunFinish(run_id, 'completed', '"ok"')},
        ]
        for step, extra in enumerate(extras):
            events = [
                StepEvent(run_id, kind, step, now, idempotency_key=f'{step}:{kind}')  # type: ignore[arg-type]
                for kind in kinds[step]
            ]
            snapshot = SnapshotMark('interrupted' if step == 1 else 'complete', step, f'{step}')
            write = StepWrite(
                conversation_id,
                'bench',
                run_id,
                revision,
                messages=[history[first + step]],
                events=events,
                snapshot=snapshot,
                durable=False,
                **extra,
            )
            revision = store.sync.step_write(write)


REPEAT = 9
MODEL_LATENCY = 0.020
"""The answering time of the slower model in (a): writes that go behind a request overlap it."""
HOOKS = (
    'before_run',
    'before_model_request',
    'after_model_request',
    'after_node_run',
    'before_tool_execute',
    'after_tool_execute',
    'on_tool_execute_error',
    'after_run',
)


def _timed_hooks(persistence: Any) -> Any:
    """`persistence` with each hook's wall time added to `persistence.spent`."""
    persistence.spent = 0.0
    for name in HOOKS:
        hook = getattr(persistence, name)

        async def timed_hook(*args: Any, _hook: Any = hook, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await _hook(*args, **kwargs)
            finally:
                persistence.spent += time.perf_counter() - start

        setattr(persistence, name, timed_hook)
    return persistence


STEP_PAIRED: dict[int, tuple[float, float, float]] = {}
"""Whole-run difference with minus without StepPersistence: median, first and third quartile."""
STEP_COMMITS: dict[int, tuple[float, float]] = {}
"""Write transactions, and those of them synced to disk, per StepPersistence turn, by size."""
STEP_HELD: dict[int, tuple[float, float]] = {}
"""20 ms model: the longest store operation run in the event loop per turn, median and worst, by size."""
FLOORS: list[float] = []
"""`disk_floor`, measured after each round of `ours_step_overheads`."""
STEP_HOPS: dict[int, float] = {}
"""20 ms model: StepPersistence per turn with every store operation in a worker thread, by size."""


COMMIT_FRAMES = 36
"""WAL frames (page + 24-byte header) a step write commits at 20k messages, counted from the WAL."""


def disk_floor(directory: Path) -> float:
    """What two of our synced commits cost in I/O alone on this disk right now: write the frames of
    one step write, fdatasync, after the idle of a model request (median of 15), times two. The
    machine's speed drifts within a session; this puts the StepPersistence column in proportion."""
    path = directory / 'disk-floor'
    frame = b'x' * 4120
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        os.pwrite(fd, b'\0' * (COMMIT_FRAMES * len(frame) * 16), 0)
        os.fsync(fd)
        samples = []
        for i in range(15):
            time.sleep(MODEL_LATENCY)
            start = time.perf_counter()
            for j in range(COMMIT_FRAMES):
                os.pwrite(fd, frame, ((i % 16) * COMMIT_FRAMES + j) * len(frame))
            os.fdatasync(fd)
            samples.append(time.perf_counter() - start)
    finally:
        os.close(fd)
        path.unlink()
    return 2 * statistics.median(samples)
