"""FileStore keeps what it acknowledged: a torn tail never poisons a later write of any kind, a
ledger row for a missing conversation is refused instead of orphaning the id, and a write reads
only what changed since its store last looked (bytes counted, not timed)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from threadline.exceptions import ConversationNotFound
from threadline.storage import (
    AuditEvent,
    FileBackend,
    FileStore,
    RunFinish,
    SnapshotMark,
    SnapshotRequest,
    StepEvent,
    StepWrite,
    ToolEffect,
)
from threadline.storage.testing import turn

T0 = datetime(2025, 1, 1, tzinfo=UTC)
WRITES: dict[str, Callable[[FileBackend], object]] = {
    'append': lambda s: s.append('c', turn(1, conversation_id='c'), scope='s'),
    'record_outcome': lambda s: s.record_outcome('c', scope='s', run_id='run-0', expected_effect='refund'),
    'record_wait': lambda s: s.record_wait(
        'c', scope='s', run_id='run-0', owner='ops', decision='approve', deadline=T0, resume_token='t'
    ),
    'resolve_wait': lambda s: s.resolve_wait('c', scope='s', resume_token='t'),
    'record_tool_effect': lambda s: s.record_tool_effect(
        ToolEffect('run-0', 'call-0', 'lookup', 'completed', T0), conversation_id='c', scope='s'
    ),
    'quarantine': lambda s: s.quarantine('c', scope='s', report={'verdict': 'BLOCKED'}),
    'record_audit_events': lambda s: s.record_audit_events('c', [AuditEvent('c', 'k', None, 1, T0)], scope='s'),
    'register_run': lambda s: s.register_run('run-1', conversation_id='c', scope='s'),
    'append_event': lambda s: s.append_event(StepEvent('run-0', 'run_started', 0, T0), conversation_id='c', scope='s'),
    'save_snapshot': lambda s: s.save_snapshot(SnapshotRequest('run-0', 'c', 's', SnapshotMark('complete', 1))),
    'finish_run': lambda s: s.finish_run(RunFinish('run-0', 'completed', '"ok"'), scope='s'),
    'step_write': lambda s: s.step_write(StepWrite('c', 's', 'run-0', None, messages=turn(2, conversation_id='c'))),
    'replace': lambda s: s.replace('c', turn(0, conversation_id='c')[:2], scope='s', expected_revision=1),
}


@pytest.mark.parametrize('write', sorted(WRITES))
def test_every_write_kind_recovers_a_torn_tail(tmp_path: Path, write: str) -> None:
    store = FileStore(tmp_path).sync
    store.append('c', turn(0, conversation_id='c', run_id='run-0'), scope='s')
    store.register_run('run-0', conversation_id='c', scope='s')
    [path] = (tmp_path / 'conversations').glob('*.jsonl')
    with path.open('ab') as handle:
        handle.write(b'{"t": "batch", "branch": 1, "start": 4, "bod')  # a writer killed mid-line
    WRITES[write](FileStore(tmp_path).sync)  # another process, as after a crash
    reloaded = FileStore(tmp_path).sync.load('c', scope='s')
    assert reloaded.messages[:2] == turn(0, conversation_id='c', run_id='run-0')[:2]
    assert path.read_bytes().endswith(b'\n')


def test_a_ledger_row_for_a_missing_conversation_is_refused_and_the_id_stays_usable(tmp_path: Path) -> None:
    store = FileStore(tmp_path).sync
    with pytest.raises(ConversationNotFound):
        store.record_tool_effect(ToolEffect('r', 'call', 'refund', 'started', T0), conversation_id='c-new', scope='s')
    revision = store.append('c-new', turn(0, conversation_id='c-new'), scope='s')
    assert store.load('c-new', scope='s').revision == revision == 1


def test_a_write_reads_only_what_changed_since_its_store_last_looked(tmp_path: Path) -> None:
    ours, theirs = FileStore(tmp_path).sync, FileStore(tmp_path).sync  # two processes on one conversation
    ours.append('c', turn(0, conversation_id='c'), scope='s')
    costs = []
    for i in range(1, 300):
        writer = ours if i % 2 else theirs
        before = writer.bytes_read
        writer.append('c', turn(i, conversation_id='c'), scope='s')
        costs.append(writer.bytes_read - before)
    size = next((tmp_path / 'conversations').glob('*.jsonl')).stat().st_size
    # Each write reads the other writer's last turn (and a few bytes at the file's head and tail):
    # the same few kilobytes at the start as after 300 turns, never the ~100 KB file.
    assert max(costs[-50:]) <= max(costs[2:52]) * 1.5
    assert max(costs[-50:]) < size / 20
    assert ours.load('c', scope='s').length == 1200
