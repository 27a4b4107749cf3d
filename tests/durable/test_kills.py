"""Durable runs killed (SIGKILL) at every kind of point, then restarted: inside a model request,
inside a tool body before and after its effect, between steps, and just before and just after a
store write commits. Every trial must finish, make no completed model request again, apply no
effect twice (the tool looks its key up), store the conversation an uncrashed run stores (ids and
timestamps aside), leave the ledger settled and the seals intact.

A handful of trials run by default; `-m slow` runs 200 on SQLite and 50 on PostgreSQL, one trial
at a time. `THREADLINE_KILL_WORKERS=2` runs two at once on the same databases: then a worker that
restarts beside another may resume the other's workflow while it resumes it too, and a completed
model request is made twice (seen on SQLite; not yet understood, so not yet the default).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.storage.conftest import fresh_postgres_url, needs_postgres

ROOT = Path(__file__).resolve().parents[2]


def _child(directory: Path, backend: str, trial: str, *mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, '-m', 'tests.durable._trial_child', str(directory), backend, trial, *mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def _comparable(value: Any, trial: str) -> Any:
    """A stored history with what differs between runs left out: ids, times, the trial's name."""
    if isinstance(value, dict):
        return {k: _comparable(v, trial) for k, v in value.items() if k not in ('timestamp', 'run_id')}
    if isinstance(value, list):
        return [_comparable(v, trial) for v in value]
    return value.replace(trial, 'TRIAL') if isinstance(value, str) else value


def run_trials(directory: Path, backend: str, count: int) -> Counter[str]:
    """`count` kill-and-restart trials; returns where the processes died."""
    prefix = uuid.uuid4().hex[:8]  # trial ids are workflow and conversation ids: never reused
    reference = _report(_child(directory, backend, f'{prefix}-clean', 'clean'))
    points = list(range(1, reference['ticks'] + 1))
    plan = [points[i % len(points)] for i in range(count)]
    random.Random(count).shuffle(plan)

    def trial(index: int) -> str:
        name = f'{prefix}-{index}'
        killed = _child(directory, backend, name, 'run', str(plan[index]))
        assert killed.returncode == -9, killed.stderr[-3000:]
        report = _report(_child(directory, backend, name, 'recover'))
        assert report['output'] == reference['output']
        assert _comparable(report['messages'], name) == _comparable(reference['messages'], f'{prefix}-clean')
        assert report['ledger'] == reference['ledger'] == [['call-1', 'completed'], ['call-2', 'completed']]
        assert [times for _, times in report['applied']] == [1, 1], (report['applied'], name)  # none applied twice
        assert report['verified']
        answered = Counter((directory / f'requests-{name}.log').read_text().split())
        assert set(answered.values()) == {1}  # every completed request was answered once
        return (directory / f'killed-{name}').read_text()

    with ThreadPoolExecutor(max_workers=int(os.environ.get('THREADLINE_KILL_WORKERS', '1'))) as workers:
        return Counter(workers.map(trial, range(count)))


def _postgres_directory(tmp_path: Path) -> Path:
    import psycopg

    with psycopg.connect(fresh_postgres_url(), autocommit=True) as conn:
        conn.execute('DROP SCHEMA IF EXISTS threadline_dbos CASCADE')
    return tmp_path


def test_a_few_kills_on_sqlite(tmp_path: Path) -> None:
    where = run_trials(tmp_path, 'sqlite', 4)
    assert sum(where.values()) == 4


@needs_postgres
def test_a_few_kills_on_postgres(tmp_path: Path) -> None:
    where = run_trials(_postgres_directory(tmp_path), 'postgres', 2)
    assert sum(where.values()) == 2


@pytest.mark.slow
def test_200_kills_on_sqlite(tmp_path: Path) -> None:
    where = run_trials(tmp_path, 'sqlite', 200)
    print(f'\nkill trials on SQLite: {dict(where)}')
    assert sum(where.values()) == 200 and len(where) == 6  # every kind of point was hit


@pytest.mark.slow
@needs_postgres
def test_50_kills_on_postgres(tmp_path: Path) -> None:
    where = run_trials(_postgres_directory(tmp_path), 'postgres', 50)
    print(f'\nkill trials on PostgreSQL: {dict(where)}')
    assert sum(where.values()) == 50 and len(where) == 6
