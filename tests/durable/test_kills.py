"""Durable runs killed (SIGKILL) at every kind of point, then restarted: inside a model request,
inside a tool body before and after its effect, between steps, and just before and just after a
store write commits. Every trial must finish, make no completed model request again, apply no
effect twice (the tool looks its key up), store the conversation an uncrashed run stores (ids and
timestamps aside), leave the ledger settled and the seals intact.

A handful of trials run by default; `-m slow` runs 200 on SQLite and 50 on PostgreSQL. Two trials
run at once on the same databases (THREADLINE_KILL_WORKERS sets how many): a worker that restarts
re-queues its unfinished workflow and any live worker may take it (DBOS recovery across
executors), so a worker often finishes another's turn, and a worker may die while it runs
another's. A completed model request may then be made again only if the worker that made it died
before its checkpoint: the request log names the process behind every answer, and the test holds
it to that. A worker that exits leaving a workflow pending under its executor id is started again,
as a deployment restarts its workers (see `_restart_while_pending`).
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.durable._spawn import child, report
from tests.storage.conftest import fresh_postgres_url, needs_postgres


def _child(directory: Path, backend: str, trial: str, *mode: str) -> subprocess.CompletedProcess[str]:
    try:
        return child('_trial_child', directory, backend, trial, *mode, timeout=180)
    except subprocess.TimeoutExpired as stuck:  # say what the stuck worker said, not only that it was
        raise AssertionError(f'trial {trial} {mode[0]} never finished: {stuck.stderr!r:.3000}') from None


def _comparable(value: Any, trial: str) -> Any:
    """A stored history with what differs between runs left out: ids, times, the trial's name."""
    if isinstance(value, dict):
        return {k: _comparable(v, trial) for k, v in value.items() if k not in ('timestamp', 'run_id')}
    if isinstance(value, list):
        return [_comparable(v, trial) for v in value]
    return value.replace(trial, 'TRIAL') if isinstance(value, str) else value


@dataclass
class Trials:
    """Where the processes died, and what the restarted workers did."""

    killed_at: Counter[str] = field(default_factory=Counter)
    resumed_elsewhere: int = 0  # trials whose workflow another trial's worker ran part of
    in_flight_again: int = 0  # answered requests made again because the worker that made them died


def _restart_while_pending(directory: Path, backend: str, trial: str) -> None:
    """Start a worker that exited again while workflows are pending under its executor id, as a
    deployment restarts its workers: DBOS without Conductor recovers a workflow only when its
    executor id starts again. A worker may exit holding one: it took another's workflow from the
    queue while another execution of it was in flight (a worker killed in it), and DBOS parks the
    second execution until the first's outcome is recorded, which never comes; the worker's
    shutdown then gives up waiting for it after its timeout."""
    for _ in range(5):
        if not _pending_under(directory, backend, f'worker-{trial}'):
            return
        _child(directory, backend, trial, 'resume')
    raise AssertionError(f'worker-{trial} still holds pending workflows after five restarts')


def _pending_under(directory: Path, backend: str, executor: str) -> int:
    """How many workflows are pending under `executor` in DBOS's system database."""
    if backend == 'postgres':
        import psycopg

        query = 'SELECT COUNT(*) FROM threadline_dbos.workflow_status WHERE executor_id = %s AND status = %s'
        with psycopg.connect(os.environ['THREADLINE_TEST_POSTGRES_URL']) as conn:
            row = conn.execute(query, (executor, 'PENDING')).fetchone()
    else:
        import sqlite3

        query = 'SELECT COUNT(*) FROM workflow_status WHERE executor_id = ? AND status = ?'
        with contextlib.closing(sqlite3.connect(directory / 'store.db-dbos.sqlite')) as conn:
            row = conn.execute(query, (executor, 'PENDING')).fetchone()
    return int(row[0]) if row else 0


def run_trials(directory: Path, backend: str, count: int) -> Trials:
    """`count` kill-and-restart trials, THREADLINE_KILL_WORKERS at once (default: two)."""
    prefix = uuid.uuid4().hex[:8]  # trial ids are workflow and conversation ids: never reused
    reference = report(_child(directory, backend, f'{prefix}-clean', 'clean'))
    points = list(range(1, reference['ticks'] + 1))
    plan = [points[i % len(points)] for i in range(count)]
    random.Random(count).shuffle(plan)

    def trial(index: int) -> tuple[str, str]:
        name = f'{prefix}-{index}'
        killed = _child(directory, backend, name, 'run', str(plan[index]))
        assert killed.returncode == -9, killed.stderr[-3000:]
        recovered = report(_child(directory, backend, name, 'recover'))
        _restart_while_pending(directory, backend, name)
        assert recovered['output'] == reference['output']
        assert _comparable(recovered['messages'], name) == _comparable(reference['messages'], f'{prefix}-clean')
        assert recovered['ledger'] == reference['ledger'] == [['call-1', 'completed'], ['call-2', 'completed']]
        assert [times for _, times in recovered['applied']] == [1, 1], (
            recovered['applied'],
            name,
        )  # none applied twice
        assert recovered['verified']
        assert recovered['verdict'] == reference['verdict'] == 'READY'  # the audit, after the outcome receipts
        where, pid = (directory / f'killed-{name}').read_text().split('\n')
        return where, pid

    with ThreadPoolExecutor(max_workers=int(os.environ.get('THREADLINE_KILL_WORKERS', '2'))) as workers:
        killed = list(workers.map(trial, range(count)))
    trials = Trials(killed_at=Counter(where for where, _ in killed))
    dead = {pid for _, pid in killed}
    for index in range(count):
        name = f'{prefix}-{index}'
        answers: dict[str, list[str]] = {}
        workers_seen = set()
        for line in (directory / f'requests-{name}.log').read_text().splitlines():
            request, pid, worker = line.split()
            answers.setdefault(request, []).append(pid)
            workers_seen.add(worker)
        trials.resumed_elsewhere += workers_seen != {name}
        for request, pids in answers.items():
            # a request is made again only if the worker whose answer came first died before its checkpoint
            assert set(pids[:-1]) <= dead, (name, request, pids)
            trials.in_flight_again += len(pids) - 1
    return trials


def _postgres_directory(tmp_path: Path) -> Path:
    import psycopg

    with psycopg.connect(fresh_postgres_url(), autocommit=True) as conn:
        conn.execute('DROP SCHEMA IF EXISTS threadline_dbos CASCADE')
    return tmp_path


def test_a_few_kills_on_sqlite(tmp_path: Path) -> None:
    trials = run_trials(tmp_path, 'sqlite', 4)
    assert trials.killed_at.total() == 4


@needs_postgres
def test_a_few_kills_on_postgres(tmp_path: Path) -> None:
    trials = run_trials(_postgres_directory(tmp_path), 'postgres', 2)
    assert trials.killed_at.total() == 2


def _print(backend: str, trials: Trials) -> None:
    print(
        f'\nkill trials on {backend}: {dict(trials.killed_at)}; resumed in part by another worker: '
        f'{trials.resumed_elsewhere}; answered requests made again after their worker died: {trials.in_flight_again}'
    )


@pytest.mark.slow
def test_200_kills_on_sqlite(tmp_path: Path) -> None:
    trials = run_trials(tmp_path, 'sqlite', 200)
    _print('SQLite', trials)
    assert trials.killed_at.total() == 200 and len(trials.killed_at) == 6  # every kind of point was hit


@pytest.mark.slow
@needs_postgres
def test_50_kills_on_postgres(tmp_path: Path) -> None:
    trials = run_trials(_postgres_directory(tmp_path), 'postgres', 50)
    _print('PostgreSQL', trials)
    assert trials.killed_at.total() == 50 and len(trials.killed_at) == 6
