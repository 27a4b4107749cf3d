"""The FileStore's records: the state a conversation file replays into, and the JSON-lines
records that build it (one line per change; see `file.py`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..messages import RunUsage
from ._chain import GENESIS
from ._neutral import now_text, parse_time, to_python_output
from ._records import (
    RunFinish,
    RunRecord,
    Snapshot,
    SnapshotMark,
)

__all__ = [
    'REV',
    'Branch',
    'ConvState',
    'file_key',
    'finish_record',
    'replay',
    'run_record',
    'seen',
    'snapshot_record',
    'strip_tag',
    'to_run',
    'to_snapshot',
]


@dataclass
class Branch:
    id: int
    parent: int | None
    fork_position: int
    owner: str
    messages: dict[int, str] = field(default_factory=dict)
    length: int = 0


@dataclass
class ConvState:
    id: str
    scope: str
    created_at: str
    updated_at: str
    head: int
    revision: int = 0
    title: str | None = None
    usage: RunUsage = field(default_factory=RunUsage)
    forked_from: str | None = None
    forked_at: int | None = None
    parent_branch: tuple[str, int] | None = None
    chain_head: str = GENESIS
    branches: dict[int, Branch] = field(default_factory=dict)
    batches: list[dict[str, Any]] = field(default_factory=list)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    effects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    waits: list[dict[str, Any]] = field(default_factory=list)
    audit_events: list[dict[str, Any]] = field(default_factory=list)
    quarantine: dict[str, Any] | None = None


def file_key(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:32]


def finish_record(finish: RunFinish, *, with_usage: bool) -> dict[str, Any]:
    usage = msgspec.to_builtins(finish.usage) if with_usage and finish.usage else None
    return {
        't': 'finish',
        'run_id': finish.run_id,
        'status': finish.status,
        'output': finish.output_json,
        'usage': usage,
        'at': now_text(),
    }


def snapshot_record(run_id: str, branch_id: int, position: int, mark: SnapshotMark) -> dict[str, Any]:
    return {
        't': 'snapshot',
        'run_id': run_id,
        'branch_id': branch_id,
        'position': position,
        'state': mark.state,
        'step_index': mark.step_index,
        'idempotency_key': mark.idempotency_key,
        'timestamp': now_text(),
    }


def to_snapshot(conversation_id: str, s: dict[str, Any]) -> Snapshot:
    return Snapshot(
        s['run_id'],
        conversation_id,
        s['position'],
        s['branch_id'],
        s['state'],
        s['step_index'],
        parse_time(s['timestamp']),
    )


REV: dict[str, Any] = {'t': 'rev'}


def strip_tag(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in ('t', 'at')}


def seen(records: list[dict[str, Any]], run_id: str, key: str | None) -> bool:
    return key is not None and any(r['run_id'] == run_id and r.get('idempotency_key') == key for r in records)


def run_record(result: Any, conversation_id: str, *, add_usage: bool) -> dict[str, Any]:
    try:
        output = json.dumps(to_python_output(result.output))
    except (TypeError, ValueError):
        output = json.dumps(repr(result.output))
    return {
        't': 'finish',
        'run_id': result.run_id,
        'status': 'completed',
        'output': output,
        'usage': msgspec.to_builtins(result.run_usage),
        'add_usage': add_usage,
        'model_name': getattr(result, 'model_name', None),
        'at': now_text(),
        'register': True,
    }


def to_run(run_id: str, conversation_id: str, run: dict[str, Any]) -> RunRecord:
    usage = msgspec.convert(run['usage'], RunUsage) if run.get('usage') else None
    return RunRecord(
        run_id,
        conversation_id,
        parse_time(run.get('started_at')),
        parse_time(run['finished_at']) if run.get('finished_at') else None,
        run.get('model_name'),
        run.get('output'),
        usage,
        run.get('status', 'running'),
    )


def replay(records: list[dict[str, Any]]) -> ConvState:
    """The conversation's state after applying its records in order."""
    create = records[0]
    state = ConvState(create['id'], create['scope'], create['at'], create['at'], head=1, title=create.get('title'))
    state.branches[1] = Branch(1, None, create.get('forked_at') or 0, state.id, length=create.get('forked_at') or 0)
    if create.get('forked_from'):
        state.forked_from, state.forked_at = create['forked_from'], create['forked_at']
        state.parent_branch = (create['parent_branch'][0], create['parent_branch'][1])
        state.chain_head = create['link']
        if create.get('usage'):
            state.usage = msgspec.convert(create['usage'], RunUsage)
        state.revision = 1
    for record in records[1:]:
        kind = record['t']
        state.updated_at = record.get('at', state.updated_at)
        if kind == 'batch':
            branch = state.branches[record['branch']]
            for offset, body in enumerate(record['bodies']):
                branch.messages[record['start'] + offset] = body
            end = record['start'] + len(record['bodies'])
            branch.length = end
            state.head, state.chain_head = record['branch'], record['link']
            state.title = state.title or record.get('title')
            state.batches.append(
                {
                    'branch': record['branch'],
                    'start': record['start'],
                    'end': end,
                    'provenance': record['provenance'],
                    'run_id': record['run_id'],
                    'link': record['link'],
                    'at': record['at'],
                }
            )
        elif kind == 'branch':
            state.branches[record['id']] = Branch(
                record['id'], record['parent'], record['fork_position'], state.id, length=record['fork_position']
            )
            state.head = record['id']
        elif kind == 'head':
            state.chain_head = record['link']
        elif kind == 'rev':
            state.revision += 1
        elif kind == 'materialize':
            branch = state.branches[record['branch']]
            for position, body in enumerate(record['bodies']):
                branch.messages[position] = body
            branch.fork_position = 0
            state.parent_branch = None
        elif kind == 'run':
            state.runs.setdefault(record['run_id'], {'status': 'running', 'started_at': record['started_at']})
        elif kind == 'finish':
            run = state.runs.setdefault(record['run_id'], {'started_at': record['at']})
            first_completion = run.get('status') != 'completed' and record['status'] == 'completed'
            run.update(
                status=record['status'],
                finished_at=record['at'],
                output=record.get('output'),
                model_name=record.get('model_name', run.get('model_name')),
            )
            if record.get('usage'):
                run['usage'] = record['usage']
            if first_completion and record.get('usage') and record.get('add_usage', True):
                state.usage.incr(msgspec.convert(record['usage'], RunUsage))
        elif kind == 'event':
            state.events.append(record)
        elif kind == 'outcome':
            state.outcomes.append(record)
        elif kind == 'wait':
            state.waits.append(record)
        elif kind == 'wait_resolved':
            for wait in state.waits:
                if wait['resume_token'] == record['resume_token']:
                    wait['resolved_at'] = record['at']
        elif kind == 'audit_event':
            state.audit_events.append(record)
        elif kind == 'quarantine':
            state.quarantine = record['report']
        elif kind == 'snapshot':
            state.snapshots.append(record)
        elif kind == 'effect':
            key = (record['run_id'], record['tool_call_id'])
            previous = state.effects.get(key, {})
            merged = {
                **previous,
                **{k: v for k, v in record.items() if k != 't' and (v is not None or k not in previous)},
            }
            state.effects[key] = merged
    return state
