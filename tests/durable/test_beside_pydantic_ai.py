"""A pydantic-ai `Agent` with pydantic-ai's own `DBOSDurability` and Threadline's pydantic-ai
`StepPersistence`, killed inside its tool and restarted: the workflow finishes, the completed model
request is not made again, and the store holds what an uncrashed run stores, once.

Who owns what (also in `threadline.pydantic_ai._step_persistence`): pydantic-ai's DBOSDurability
owns the workflow, its model-request steps and its run ids; Threadline owns the conversation, the
events, the snapshots and the ledger, whose reads and writes become DBOS steps inside the workflow,
so a replay skips what its first attempt stored. Recorded twice: each model response (a step's
output, and a message in the log). pydantic-ai does not tell a tool it is being retried: the tool
the process died in runs again, and the ledger holds one row for the call, completed.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytest.importorskip('pydantic_ai.durable_exec.dbos', reason='pydantic-ai with DBOS is a dev dependency')

from tests.durable._spawn import child, report


def _child(directory: Path, command: str) -> subprocess.CompletedProcess[str]:
    return child('_pa_child', directory, command)


def test_both_survive_a_kill_inside_the_tool(tmp_path: Path) -> None:
    clean = report(_child(tmp_path, 'clean'))
    killed = _child(tmp_path, 'start')
    assert killed.returncode == -9, killed.stderr[-3000:]
    recovered = report(_child(tmp_path, 'recover'))
    assert (
        recovered
        == clean
        == {
            'output': 'refunded A-17',
            'kinds': [['user-prompt'], ['tool-call'], ['tool-return'], ['text']],
            'runs': 1,
            'ledger': [['call-1', 'completed']],
            'verified': True,
        }
    )
    log = [json.loads(line) for line in (tmp_path / 'log.jsonl').read_text().splitlines()]
    crashed = [(e['kind'], e.get('messages')) for e in log if e['command'] != 'clean']
    # the first request was answered before the kill and comes from its checkpoint; the tool the
    # process died in runs again (pydantic-ai's durability runs a tool at least once)
    assert crashed == [('model_request', 1), ('tool', None), ('tool', None), ('model_request', 3)]
