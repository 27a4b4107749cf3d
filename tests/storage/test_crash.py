"""Crash safety: a child process persisting a conversation is killed with SIGKILL at random points.

After each kill the store opens, every turn the child reported as saved is there, the stored
history re-hashes against its chain (nothing half-written), and a tool killed mid-body is reported
as unknown by `inspect_recovery`. 20 trials run by default on SQLite (10 on PostgreSQL and the file store); `-m slow` runs 200.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.storage.conftest import fresh_postgres_url, needs_postgres
from threadline.exceptions import ConversationNotFound
from threadline.storage import inspect_recovery, open_store

CHILD = Path(__file__).with_name('_crash_child.py')
ROOT = Path(__file__).resolve().parents[2]


def one_trial(target: str, conversation_id: str, rng: random.Random) -> dict[str, int]:
    env = {**os.environ, 'PYTHONPATH': str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, str(CHILD), target, conversation_id], stdout=subprocess.PIPE, text=True, env=env
    )
    lines: list[str] = []

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            lines.append(line.split())

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(rng.uniform(0.4, 1.6))
    child.send_signal(signal.SIGKILL)
    child.wait()
    reader.join()
    return check(target, conversation_id, lines)


def check(target: str, conversation_id: str, lines: list[list[str]]) -> dict[str, int]:
    store = open_store(target)
    try:
        saved = [int(line[2]) for line in lines if line[0] == 'saved']
        try:
            stored = store.sync.load(conversation_id, scope='crash')
        except ConversationNotFound:
            assert not saved, 'a turn was reported saved but the conversation is missing'
            return {'saved': 0, 'unknown': 0}
        if saved:
            assert stored.length >= saved[-1], f'reported {saved[-1]} messages saved, found {stored.length}'
        check_chain = store.sync.verify(conversation_id, scope='crash')
        assert check_chain.ok, check_chain
        started = {(line[1], line[2]) for line in lines if line[0] == 'tool-start'}
        ended = {(line[1], line[2]) for line in lines if line[0] == 'tool-end'}
        unknown = 0
        for run_id, call_id in started - ended:  # killed inside the tool body
            inspection = asyncio.run(inspect_recovery(store, run_id, scope='crash'))
            assert call_id in {e.tool_call_id for e in inspection.unknown}, inspection
            unknown += 1
        return {'saved': len(saved), 'unknown': unknown}
    finally:
        store.close()


def run_trials(target_for: object, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    totals = {'saved': 0, 'unknown': 0}
    for trial in range(trials):
        target = target_for(trial)  # type: ignore[operator]
        result = one_trial(target, f'crash-{trial}', rng)
        for key in totals:
            totals[key] += result[key]
    assert totals['saved'] > 0  # the trials did reach saved turns


def test_sqlite_survives_sigkill(tmp_path: Path) -> None:
    run_trials(lambda t: str(tmp_path / 'crash.db'), 20, seed=1)


def test_file_store_survives_sigkill(tmp_path: Path) -> None:
    run_trials(lambda t: f'file:{tmp_path / "files"}', 10, seed=5)


@needs_postgres
def test_postgres_survives_sigkill() -> None:
    url = fresh_postgres_url()
    run_trials(lambda t: url, 10, seed=2)


@pytest.mark.slow
def test_sqlite_survives_sigkill_200(tmp_path: Path) -> None:
    run_trials(lambda t: str(tmp_path / 'crash.db'), 200, seed=3)


@pytest.mark.slow
@needs_postgres
def test_postgres_survives_sigkill_200() -> None:
    url = fresh_postgres_url()
    run_trials(lambda t: url, 200, seed=4)
