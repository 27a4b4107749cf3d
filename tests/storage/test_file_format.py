"""FileStore files written by Threadline 0.1 (before the typed record schema) load unchanged:
every record kind, read back through the whole contract, says what it said then."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from threadline import ModelMessagesTypeAdapter
from threadline.storage import ChainCheck, FileBackend, FileStore

FIXTURE = Path(__file__).resolve().parents[1] / 'data' / 'filestore_0_1'


def describe(store: FileBackend) -> dict[str, Any]:
    """Everything the store says about the fixture's two conversations and its run, in a stable form."""
    out: dict[str, Any] = {}
    for cid in ('conv-a', 'conv-b'):
        s = store.load(cid, scope='tenant')
        out[cid] = {
            'messages': json.loads(ModelMessagesTypeAdapter.dump_json(s.messages)),
            'revision': s.revision,
            'usage': repr(s.usage),
            'title': s.title,
            'batches': [(b.start, b.end, b.provenance, b.run_id, b.link, b.complete) for b in s.batches],
            'forked_from': s.forked_from,
            'shared_prefix': s.shared_prefix,
            'chain_head': s.chain_head,
            'quarantined': s.quarantined,
            'verify': repr(_chain_part(store.verify(cid, scope='tenant'))),
            'lineage': store.lineage(cid, scope='tenant'),
            'runs': [
                repr((r.run_id, r.status, r.output_json, r.usage, r.model_name))
                for r in store.list_runs(cid, scope='tenant')
            ],
            'outcomes': [repr(o) for o in store.outcomes(cid, scope='tenant')],
            'waits': [
                repr((w.owner, w.deadline, w.resume_token, w.resolved_at is not None))
                for w in store.waits(cid, scope='tenant')
            ],
            'audit_events': [repr(e) for e in store.audit_events(cid, scope='tenant')],
            'effects': [
                repr((e.tool_call_id, e.status, e.idempotency_key, e.ended_at))
                for e in store.tool_effects_for_conversation(cid, scope='tenant')
            ],
        }
    out['run-2'] = {
        'events': [repr(e) for e in store.list_events('run-2', scope='tenant')],
        'snapshots': [repr((s.position, s.state, s.step_index)) for s in store.list_snapshots('run-2', scope='tenant')],
    }
    return out


def _chain_part(check: ChainCheck) -> tuple[object, ...]:
    return (check.ok, check.checked, check.chain_head, check.first_bad_position, check.reason)


def test_files_written_by_0_1_load_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('THREADLINE_AUDIT_KEY', 'fixture-key')
    shutil.copytree(FIXTURE, tmp_path / 'store', ignore=shutil.ignore_patterns('expected.json'))
    seen = json.loads(json.dumps(describe(FileStore(tmp_path / 'store').sync), default=str))
    assert seen == json.loads((FIXTURE / 'expected.json').read_text())


def test_an_unknown_record_kind_is_reported_not_skipped(tmp_path: Path) -> None:
    from threadline.exceptions import CorruptRecordError
    from threadline.storage.testing import turn

    store = FileStore(tmp_path).sync
    store.append('c', turn(0, conversation_id='c'), scope='s')
    [path] = (tmp_path / 'conversations').glob('*.jsonl')
    with path.open('a') as handle:
        handle.write('{"t": "from-the-future", "x": 1}\n')
    with pytest.raises(CorruptRecordError, match=r'line 5 .*newer version'):
        store.load('c', scope='s')


def test_files_written_by_0_1_are_sealed_once_and_then_guarded(tmp_path: Path) -> None:
    """The re-chain migration: opening a 0.1 store seals each file as it stands, records that it
    did (beside the files and in the tip book), never again, and later edits are caught."""
    from threadline.storage import StoreSeal

    seal = StoreSeal.in_directory(tmp_path / 'keys')
    shutil.copytree(FIXTURE, tmp_path / 'store', ignore=shutil.ignore_patterns('expected.json'))
    store = FileStore(tmp_path / 'store', seal=seal).sync
    marker = json.loads((tmp_path / 'store' / 'seals.json').read_text())
    assert marker['adopted'] == 2 and marker['key_id'] == seal.key_id and marker['book_saw'] is None
    check = store.verify('conv-a', scope='tenant')
    assert check.ok and check.seals == 1 and check.key_id == seal.key_id and check.tip == 'current'
    [path] = [
        p
        for p in (tmp_path / 'store' / 'conversations').glob('*.jsonl')
        if p.read_bytes().startswith(b'{"t":"create","id":"conv-a"')
    ]
    assert path.read_bytes().count(b'"adopted"') == 1

    # Delete the marker and the seal: the book remembers the adoption, so nothing is blessed again.
    (tmp_path / 'store' / 'seals.json').unlink()
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b''.join(line for line in lines if not line.startswith(b'{"t":"seal"')))
    again = FileStore(tmp_path / 'store', seal=seal).sync
    assert json.loads((tmp_path / 'store' / 'seals.json').read_text())['book_saw'] is not None
    check = again.verify('conv-a', scope='tenant')
    assert not check.ok and check.tip == 'truncated'
