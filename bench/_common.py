"""Shared helpers for the benchmarks: the shared workload, and a timer that takes the best of N."""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent


def workload() -> Any:
    """Import `shared/bench/workload.py` (beside the repository, or from THREADLINE_SHARED)."""
    shared = Path(os.environ.get('THREADLINE_SHARED', _HERE.parent.parent / 'shared'))
    sys.path.insert(0, str(shared / 'bench'))
    try:
        import workload as module  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    return module


def print_load_average() -> None:
    """The machine's load average, printed first: figures from a busy host are not comparable."""
    print('load average ' + ' '.join(f'{x:.2f}' for x in os.getloadavg()))


def best_of(fn: Callable[[], Any], *, repeat: int = 7, min_time: float = 0.2) -> float:
    """Best wall time of one call of `fn`, in seconds (GC paused while timing)."""
    calls = 1
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    if once < min_time / 10:
        calls = max(1, int(min_time / 10 / max(once, 1e-9)))
    best = float('inf')
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            best = min(best, (time.perf_counter() - start) / calls)
    finally:
        if gc_was_enabled:
            gc.enable()
    return best


def ms(seconds: float) -> str:
    return f'{seconds * 1e3:9.2f} ms'


def medians(cases: dict[str, Callable[[], Any]], *, runs: int = 7) -> dict[str, float]:
    """Median wall time of one call of each case, in seconds: GC on, the cases interleaved run by
    run (so both sides meet the same heap and machine state), and the heap disturbed between runs
    with a burst of garbage, as real code leaves it."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, fn in cases.items():
            _disturb_heap()
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return {name: sorted(values)[len(values) // 2] for name, values in samples.items()}


def _disturb_heap() -> None:
    garbage = [{'k': [i, str(i)]} for i in range(20_000)]
    del garbage
