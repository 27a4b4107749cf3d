"""Crash safety: a child process persisting a conversation is killed with SIGKILL at chosen points.

Each trial picks a turn and a point (before a run, inside the model call, inside the tool body,
after a save); the child signals when it gets there and is killed there, so every trial is
deterministic. After each kill the store opens, every turn the child reported as saved is there
(no lost committed turn), the stored history re-hashes against its chain (no half-written turn),
and a tool killed mid-body is reported as unknown by `inspect_recovery`. 12 trials run by default
per backend; `-m slow` runs 200.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.storage.conftest import fresh_postgres_url, needs_postgres
from threadline.exceptions import ConversationNotFound
from threadline.storage import inspect_recovery, open_store

CHILD = Path(__file__).with_name('_crash_child.py')
ROOT = Path(__file__).resolve().parents[2]


POINTS = ('start', 'model', 'tool', 'saved')


def one_trial(target: str, conversation_id: str, turn: int, point: str, child_script: Path = CHILD) -> dict[str, int]:
    env = {**os.environ, 'PYTHONPATH': str(ROOT)}
    command = [sys.executable, str(child_script), target, conversation_id, str(turn), point]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[list[str]] = []
    reached = threading.Event()

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            lines.append(line.split())
            if line.startswith('at-kill-point'):
                reached.set()

    reader = threading.Thread(target=read)
    reader.start()
    arrived = reached.wait(timeout=60)
    child.send_signal(signal.SIGKILL)
    child.wait()
    reader.join()
    assert arrived, f'the child never reached {point} of turn {turn}: {child.stderr.read() if child.stderr else ""}'
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


def run_trials(target_for: object, trials: int, seed: int, child_script: Path = CHILD) -> dict[str, int]:
    rng = random.Random(seed)
    totals = {'trials': trials, 'saved': 0, 'unknown': 0, 'killed_in_tool': 0}
    for trial in range(trials):
        target = target_for(trial)  # type: ignore[operator]
        point = POINTS[trial % len(POINTS)]
        result = one_trial(target, f'crash-{trial}', rng.randrange(3), point, child_script)
        totals['killed_in_tool'] += point == 'tool'
        for key in ('saved', 'unknown'):
            totals[key] += result[key]
    assert totals['saved'] > 0  # the trials did reach saved turns
    assert totals['unknown'] == totals['killed_in_tool']  # every kill inside a tool is reported unknown
    print(f'crash trials: {totals}')  # shown with -s; quoted in notes
    return totals


def test_sqlite_survives_sigkill(tmp_path: Path) -> None:
    run_trials(lambda t: str(tmp_path / 'crash.db'), 12, seed=1)


def test_file_store_survives_sigkill(tmp_path: Path) -> None:
    run_trials(lambda t: f'file:{tmp_path / "files"}', 12, seed=5)


@needs_postgres
def test_postgres_survives_sigkill() -> None:
    url = fresh_postgres_url()
    run_trials(lambda t: url, 12, seed=2)


@pytest.mark.slow
def test_sqlite_survives_sigkill_200(tmp_path: Path) -> None:
    run_trials(lambda t: str(tmp_path / 'crash.db'), 200, seed=3)


@pytest.mark.slow
@needs_postgres
def test_postgres_survives_sigkill_200() -> None:
    url = fresh_postgres_url()
    run_trials(lambda t: url, 200, seed=4)
