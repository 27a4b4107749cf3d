"""A paused durable run waits as a workflow: killed while it waits, answered from a new process."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from threadline import DeferredToolRequests, ToolCallPart
from threadline.exceptions import UserError

pytest.importorskip('dbos', reason='the dbos extra is not installed')

from tests.durable._spawn import ROOT, child, report
from threadline.durable import send_approval, wait_for_approval


def _entries(directory: Path) -> list[dict[str, Any]]:
    log = directory / 'log.jsonl'
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _start_and_kill_while_waiting(directory: Path) -> int:
    child = subprocess.Popen(
        [sys.executable, '-m', 'tests.durable._approval_child', str(directory), 'start'],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not any(e['kind'] == 'waiting' for e in _entries(directory)):
        assert child.poll() is None, child.stderr.read() if child.stderr else ''
        assert time.monotonic() < deadline, 'the run never paused for approval'
        time.sleep(0.1)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    return child.pid


def _answer(directory: Path, command: str) -> dict[str, Any]:
    return report(child('_approval_child', directory, command))


def test_an_approval_sent_after_a_crash_resumes_the_waiting_run(tmp_path: Path) -> None:
    first = _start_and_kill_while_waiting(tmp_path)
    report = _answer(tmp_path, 'approve')
    assert report == {
        'output': 'done',
        'kinds': [['user-prompt'], ['tool-call'], ['tool-return'], ['text']],  # stored once, no repeats
        'verified': True,
    }
    entries = _entries(tmp_path)
    requests = [(e['messages'], e['pid'] == first) for e in entries if e['kind'] == 'model_request']
    assert requests == [(1, True), (3, False)]  # the request before the pause was not made again
    assert [e['pid'] != first for e in entries if e['kind'] == 'tool'] == [True]  # ran once, after approval


def test_a_denial_reaches_the_model_and_the_tool_never_runs(tmp_path: Path) -> None:
    _start_and_kill_while_waiting(tmp_path)
    report = _answer(tmp_path, 'deny')
    assert report['output'] == 'done' and report['verified']
    assert not [e for e in _entries(tmp_path) if e['kind'] == 'tool']


def test_approvals_are_checked_before_they_are_sent() -> None:
    with pytest.raises(UserError, match=r"these do not: \['r2'\]"):
        asyncio.run(send_approval('approve-1', {'r1': True, 'r2': 'yes'}))  # type: ignore[dict-item]
    with pytest.raises(UserError, match='non-empty string'):
        asyncio.run(send_approval('', {'r1': True}))


def test_waiting_outside_a_workflow_is_refused() -> None:
    requests = DeferredToolRequests(approvals=[ToolCallPart('refund', {}, tool_call_id='r1')])
    with pytest.raises(UserError, match='only a DBOS workflow can wait durably'):
        asyncio.run(wait_for_approval(requests))
