"""Stores, seals and envelopes as Threadline wrote them before the remodel (commit eae2017), and
what that code said about them, so tests can show today's code opens and verifies them unchanged.

`tests/data/legacy_0_2/` was made by running this file with eae2017's code:

    git worktree add /tmp/old eae2017 && (cd /tmp/old && uv sync)
    /tmp/old/.venv/bin/python tests/data/legacy_stores.py tests/data/legacy_0_2 postgresql://.../legacy_fixture

With a PostgreSQL URL (an empty database of its own) it also writes `postgres.sql`, that database
as `pg_dump --inserts` printed it, for a test to load into an empty schema.

It uses only public names that both versions have. `describe` is what both versions are asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

STORE_KEYS = 'fixture=' + '5a' * 32
"""The store key the fixture was sealed with (`THREADLINE_STORE_KEYS`)."""

TRUST_SECRET = bytes(range(32))
"""The envelope key the fixture was signed with (`Keyring.single`)."""

SCOPE = 'tenant-1'
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def build(out: Path, postgres_url: str | None = None) -> None:
    """Write a SQLite store, a FileStore (and a PostgreSQL dump) and a signed envelope into `out`,
    with `expected.json`."""
    from threadline import ModelMessagesTypeAdapter
    from threadline.storage import FileStore, SQLiteStore
    from threadline.storage.testing import turn
    from threadline.trust import Keyring, sign_history

    os.environ['THREADLINE_STORE_KEYS'] = STORE_KEYS
    os.environ['THREADLINE_HOME'] = str(out / 'home')
    os.environ['THREADLINE_AUDIT_KEY'] = 'fixture-audit-key'
    expected: dict[str, Any] = {}
    stores: list[tuple[str, Any]] = [('sqlite', SQLiteStore(out / 'threadline.db')), ('file', FileStore(out / 'files'))]
    if postgres_url:
        from threadline.storage import PostgresStore

        stores.append(('postgres', PostgresStore(postgres_url)))
    for name, store in stores:
        sync = store.sync
        rev = sync.append('conv-a', turn(0, conversation_id='conv-a', text='where is order 42'), scope=SCOPE)
        rev = sync.append('conv-a', turn(1, conversation_id='conv-a'), scope=SCOPE, expected_revision=rev)
        sync.fork('conv-a', scope=SCOPE, at=4, new_id='conv-b')
        sync.replace(
            'conv-b', turn(2, conversation_id='conv-b', text='a rewritten turn'), scope=SCOPE, expected_revision=1
        )
        sync.record_outcome(
            'conv-a', scope=SCOPE, run_id='run-1', expected_effect='refund issued', observed_at=T0, destination='ledger'
        )
        sync.write_notebook('alice', '## Orders\nlikes order 42\n', scope=SCOPE, expected_version=0)
        expected[name] = describe(store)
        sync.close()
    if postgres_url:
        dump = subprocess.run(
            ['pg_dump', '--inserts', '--no-owner', '--no-privileges', '--schema=public', postgres_url],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (out / 'postgres.sql').write_text(dump)
    history = turn(0, conversation_id='conv-a')
    envelope = sign_history(
        history, conversation_id='conv-a', scope=SCOPE, keys=Keyring.single(TRUST_SECRET, key_id='k1')
    )
    (out / 'envelope.json').write_bytes(envelope.to_json())
    (out / 'envelope_history.json').write_bytes(ModelMessagesTypeAdapter.dump_json(history))
    (out / 'expected.json').write_text(json.dumps(expected, indent=1, sort_keys=True, default=str) + '\n')
    for leftover in (out / 'home').iterdir():  # the tip book is this machine's, not the fixture's
        leftover.unlink()
    (out / 'home').rmdir()


def describe(store: Any) -> dict[str, Any]:
    """What a store says about the fixture's conversations, in a form both versions print alike."""
    from threadline import ModelMessagesTypeAdapter

    sync = store.sync
    out: dict[str, Any] = {}
    for cid in ('conv-a', 'conv-b'):
        stored = sync.load(cid, scope=SCOPE)
        check = sync.verify(cid, scope=SCOPE)
        out[cid] = {
            'messages': json.loads(ModelMessagesTypeAdapter.dump_json(stored.messages)),
            'revision': stored.revision,
            'chain_head': stored.chain_head,
            'batches': [[b.start, b.end, b.provenance, b.link] for b in stored.batches],
            'lineage': [list(entry) for entry in sync.lineage(cid, scope=SCOPE)],
            'verify': [check.ok, check.checked, check.chain_head, check.reason, check.key_id, check.seals, check.code],
            'outcomes': [[o.expected_effect, o.destination, o.strength] for o in sync.outcomes(cid, scope=SCOPE)],
            'search': [[h.conversation_id, h.position] for h in sync.search('order', scope=SCOPE)],
        }
    notebook = sync.read_notebook('alice', scope=SCOPE)
    out['notebook'] = None if notebook is None else [notebook.content, notebook.version]
    return out


if __name__ == '__main__':
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=False)
    build(target, sys.argv[2] if len(sys.argv) > 2 else None)
