"""Servers that start together open one new tip book at once: every one of them opens it (two
servers once failed with 'database is locked', as switching to WAL does not wait its turn)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path


def _open(path: str, start: object, results: object) -> None:
    from threadline.trust.sealing import TipBook

    start.wait()  # type: ignore[attr-defined]
    try:
        TipBook(path).close()
        results.put('ok')  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - reported to the test
        results.put(f'{type(exc).__name__}: {exc}')  # type: ignore[attr-defined]


def test_many_processes_open_a_new_tip_book_at_once(tmp_path: Path) -> None:
    context = multiprocessing.get_context('fork')
    for round_ in range(5):
        path = str(tmp_path / f'tips-{round_}.sqlite')
        start, results = context.Event(), context.Queue()
        workers = [context.Process(target=_open, args=(path, start, results)) for _ in range(8)]
        for worker in workers:
            worker.start()
        start.set()
        outcomes = [results.get(timeout=60) for _ in workers]
        for worker in workers:
            worker.join(timeout=60)
        assert outcomes == ['ok'] * 8, outcomes
