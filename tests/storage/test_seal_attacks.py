"""Direct edits to the database or files, made as an attacker with the data but not the key would
make them (recomputing every unkeyed hash), are all caught by `verify()`; truncations and
rollbacks are reported as such, thanks to the tip kept outside the store."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples
from tests.storage.conftest import POSTGRES_URL, fresh_postgres_url, needs_postgres
from threadline.storage import FileStore, SnapshotMark, SnapshotRequest, SQLiteStore, StoreSeal, SyncStore, ToolEffect
from threadline.storage.testing import turn
from threadline.trust._chain import GENESIS, extend_chain

CID, SCOPE = 'conv-1', 'tenant-a'
T = datetime(2026, 1, 1, tzinfo=UTC)


def populate(store: SyncStore) -> None:
    """Two server turns, one client batch, a receipt, a wait, a ledger row, then quarantine."""
    store.append(CID, turn(0, conversation_id=CID), scope=SCOPE)
    store.append(CID, turn(1, conversation_id=CID)[:2], scope=SCOPE, provenance='client')
    store.append(CID, turn(1, conversation_id=CID)[2:], scope=SCOPE)
    store.record_outcome(CID, scope=SCOPE, run_id='run-0', expected_effect='email sent', strength='transport')
    store.record_wait(
        CID,
        scope=SCOPE,
        run_id='run-1',
        owner='ops',
        decision='approve',
        deadline=T + timedelta(days=1),
        resume_token='r1',
    )
    effect = ToolEffect('run-1', 'call-1', 'lookup', 'started', T)
    store.record_tool_effect(effect, conversation_id=CID, scope=SCOPE)
    store.append(CID, turn(2, conversation_id=CID), scope=SCOPE)
    unsent = turn(3, conversation_id=CID)[:1]  # a snapshot's message the log has not got
    store.save_snapshot(SnapshotRequest('run-1', CID, SCOPE, SnapshotMark('complete', 1, 'after-tools', unsent)))
    store.save_snapshot(SnapshotRequest('run-1', CID, SCOPE, SnapshotMark('complete', 2, 'a-position')))
    store.quarantine(CID, scope=SCOPE, report={'verdict': 'SERIALIZATION_FAILURE'})


# -- SQL --------------------------------------------------------------------------------------


class SQL:
    """A raw connection to the store's database, as an attacker has it."""

    def __init__(self, conn: Any, placeholder: str) -> None:
        self.conn, self.placeholder = conn, placeholder

    def __call__(self, sql: str, *params: Any) -> list[Any]:
        cursor = self.conn.execute(sql.replace('?', self.placeholder), params)
        rows = cursor.fetchall() if cursor.description else []
        self.conn.commit()
        return list(rows)

    def rechain(self) -> None:
        """Recompute every batch link and the chain head from the stored bodies (unkeyed sha256)."""
        [(head,)] = self('SELECT head_branch FROM conversations WHERE id = ?', CID)
        link = GENESIS
        for batch_id, start, end in self(
            'SELECT id, start, end_ FROM batches WHERE branch_id = ? ORDER BY start', head
        ):
            bodies = [
                r[0]
                for r in self(
                    'SELECT body FROM messages WHERE branch_id = ? AND position >= ? AND position < ? ORDER BY position',
                    head,
                    start,
                    end,
                )
            ]
            new = extend_chain(link, [b.encode() for b in bodies])
            self('UPDATE batches SET prev_link = ?, link = ? WHERE id = ?', link, new, batch_id)
            link = new
        self('UPDATE conversations SET chain_head = ? WHERE id = ?', link, CID)

    def drop_last_batch(self) -> None:
        [(head,)] = self('SELECT head_branch FROM conversations WHERE id = ?', CID)
        [(batch_id, start, prev)] = self(
            'SELECT id, start, prev_link FROM batches WHERE branch_id = ? ORDER BY start DESC LIMIT 1', head
        )
        self('DELETE FROM messages WHERE branch_id = ? AND position >= ?', head, start)
        self('DELETE FROM batches WHERE id = ?', batch_id)
        self('UPDATE branches SET length = ? WHERE id = ?', start, head)
        self('UPDATE conversations SET chain_head = ? WHERE id = ?', prev, CID)


def _edit_body(db: SQL) -> None:
    [(mid, body)] = db('SELECT id, body FROM messages ORDER BY position LIMIT 1')
    db('UPDATE messages SET body = ? WHERE id = ?', body.replace('question 0', 'question 9'), mid)
    db.rechain()


def _insert_message(db: SQL) -> None:
    [(head, length)] = db('SELECT c.head_branch, b.length FROM conversations c JOIN branches b ON b.id = c.head_branch')
    [(body,)] = db('SELECT body FROM messages ORDER BY position LIMIT 1')
    db('INSERT INTO messages (branch_id, position, conversation_id, body) VALUES (?, ?, ?, ?)', head, length, CID, body)
    db(
        'INSERT INTO batches (conversation_id, branch_id, start, end_, provenance, prev_link, link, created_at) '
        "VALUES (?, ?, ?, ?, 'server', '', '', '2026-01-01T00:00:00+00:00')",
        CID,
        head,
        length,
        length + 1,
    )
    db('UPDATE branches SET length = ? WHERE id = ?', length + 1, head)
    db.rechain()


def _truncate_rolling_back_seals(db: SQL) -> None:
    """Remove the last turn and the seals written with it: the database agrees with itself."""
    db.drop_last_batch()
    [(last,)] = db('SELECT max(seq) FROM seals WHERE conversation_id = ?', CID)
    db('DELETE FROM seals WHERE conversation_id = ? AND seq >= ?', CID, last - 1)  # the turn's seal and quarantine's
    db('UPDATE conversations SET quarantine = NULL WHERE id = ?', CID)


def _reseal_with_own_key(db: SQL) -> None:
    """Edit a body, rechain, and recompute every seal tag with a key the attacker chose."""
    _edit_body(db)
    own = b'attacker-key-attacker-key-123456'
    prev = '0' * 64
    for seq, facts in db('SELECT seq, facts FROM seals WHERE conversation_id = ? ORDER BY seq', CID):
        digest = hashlib.sha256(facts.encode()).hexdigest()
        msg = bytes.fromhex(prev) + json.dumps([CID, SCOPE, seq, digest], separators=(',', ':')).encode()
        tag = hmac.new(own, msg, hashlib.sha256).hexdigest()
        db('UPDATE seals SET tag = ? WHERE conversation_id = ? AND seq = ?', tag, CID, seq)
        prev = tag


SQL_ATTACKS: dict[str, tuple[Callable[[SQL], None], str]] = {
    'edit a message body, re-chained': (_edit_body, 'any'),
    'insert a forged message, re-chained': (_insert_message, 'any'),
    'flip a batch provenance client to server': (
        lambda db: db("UPDATE batches SET provenance = 'server' WHERE provenance = 'client'"),
        'record_changed',
    ),
    'forge an outcome receipt': (
        lambda db: db(
            'INSERT INTO outcome_receipts (conversation_id, expected_effect, strength, observed_at) '
            "VALUES (?, 'email sent', 'outcome', '2026-01-01T00:00:00+00:00')",
            CID,
        ),
        'record_unsealed',
    ),
    'strengthen a receipt': (lambda db: db("UPDATE outcome_receipts SET strength = 'outcome'"), 'record_changed'),
    'delete a receipt': (lambda db: db('DELETE FROM outcome_receipts'), 'record_removed'),
    'resolve a wait': (
        lambda db: db("UPDATE wait_records SET resolved_at = '2026-01-01T00:00:00+00:00'"),
        'record_changed',
    ),
    'mark a ledger entry completed': (lambda db: db("UPDATE tool_effects SET status = 'completed'"), 'record_changed'),
    'delete a ledger entry': (lambda db: db('DELETE FROM tool_effects'), 'record_removed'),
    "replace a snapshot's unsent messages": (
        lambda db: db("UPDATE snapshots SET pending = '[]' WHERE pending IS NOT NULL"),
        'record_changed',
    ),
    "move a snapshot's unsent messages": (
        lambda db: db('UPDATE snapshots SET position = position - 1 WHERE pending IS NOT NULL'),
        'record_changed',
    ),
    'give a position snapshot unsent messages': (
        lambda db: db('UPDATE snapshots SET pending = (SELECT max(pending) FROM snapshots) WHERE pending IS NULL'),
        'record_unsealed',
    ),
    'lift the quarantine': (lambda db: db('UPDATE conversations SET quarantine = NULL'), 'record_changed'),
    'truncate the last turn': (SQL.drop_last_batch, 'record_removed'),
    'truncate the last turn and its seals': (_truncate_rolling_back_seals, 'truncated'),
    'delete every seal': (lambda db: db('DELETE FROM seals'), 'truncated'),
    'reseal with the attacker own key': (_reseal_with_own_key, 'seal_invalid'),
}


@dataclass
class Target:
    store: SyncStore
    db: SQL
    reopen: Callable[[], SyncStore]


@pytest.fixture(params=['sqlite', pytest.param('postgres', marks=needs_postgres)])
def sql_target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    seal = StoreSeal.in_directory(tmp_path / 'keys')
    if request.param == 'sqlite':
        path = tmp_path / 'store.db'
        store: SyncStore = SQLiteStore(path, seal=seal).sync
        conn: Any = sqlite3.connect(path)
        placeholder = '?'
    else:
        import psycopg

        from threadline.storage import PostgresStore

        store = PostgresStore(fresh_postgres_url(), seal=seal).sync
        assert POSTGRES_URL
        conn = psycopg.connect(POSTGRES_URL)
        placeholder = '%s'
    populate(store)
    assert store.verify(CID, scope=SCOPE).ok
    yield Target(store, SQL(conn, placeholder), lambda: store)
    conn.close()
    store.close()


@pytest.mark.parametrize('attack', list(SQL_ATTACKS))
def test_a_direct_sql_edit_is_detected(sql_target: Target, attack: str) -> None:
    edit, code = SQL_ATTACKS[attack]
    edit(sql_target.db)
    check = sql_target.store.verify(CID, scope=SCOPE)
    assert not check.ok, attack
    assert code == 'any' or check.code == code, (attack, check)
    if code == 'truncated':
        assert check.tip == 'truncated' and 'tip recorded outside' in (check.reason or '')


def test_moving_a_conversation_to_another_scope_is_detected(sql_target: Target) -> None:
    sql_target.db("UPDATE conversations SET scope = 'tenant-b'")
    check = sql_target.store.verify(CID, scope='tenant-b')
    assert not check.ok and check.code == 'seal_invalid'


def test_restoring_an_older_copy_of_the_database_is_reported_as_truncated(tmp_path: Path) -> None:
    """Roll back data and every in-database checkpoint together: only the tip outside knows."""
    seal = StoreSeal.in_directory(tmp_path / 'keys')
    path = tmp_path / 'store.db'
    store = SQLiteStore(path, seal=seal)
    store.sync.append(CID, turn(0, conversation_id=CID), scope=SCOPE)
    store.close()
    shutil.copy(path, tmp_path / 'old.db')
    store = SQLiteStore(path, seal=seal)
    store.sync.append(CID, turn(1, conversation_id=CID), scope=SCOPE)
    store.close()
    shutil.copy(tmp_path / 'old.db', path)
    for suffix in ('-wal', '-shm'):
        Path(f'{path}{suffix}').unlink(missing_ok=True)
    check = SQLiteStore(path, seal=seal).sync.verify(CID, scope=SCOPE)
    assert not check.ok and check.tip == 'truncated' and check.seals == 1


def test_verify_reports_the_key_and_a_clean_store_passes(sql_target: Target) -> None:
    check = sql_target.store.verify(CID, scope=SCOPE)
    key = sql_target.store.seal.key_id  # type: ignore[attr-defined]
    assert check.ok and check.key_id == key and check.tip == 'current' and check.seals >= 8


# -- JSON lines -------------------------------------------------------------------------------


class Lines:
    """The conversation's file as an attacker edits it: a list of decoded lines."""

    def __init__(self, root: Path) -> None:
        [self.path] = (root / 'conversations').glob('*.jsonl')
        self.lines: list[dict[str, Any]] = [json.loads(x) for x in self.path.read_bytes().splitlines()]

    def save(self) -> None:
        self.path.write_bytes(b''.join(json.dumps(x, separators=(',', ':')).encode() + b'\n' for x in self.lines))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [x for x in self.lines if x['t'] == kind]

    def rechain(self) -> None:
        link = GENESIS
        for batch in self.of('batch'):
            batch['prev_link'] = link
            batch['link'] = link = extend_chain(link, [b.encode() for b in batch['bodies']])
        for head in self.of('head'):
            head['link'] = link


def _file_edit_body(f: Lines) -> None:
    batch = f.of('batch')[0]
    batch['bodies'][0] = batch['bodies'][0].replace('question 0', 'question 9')
    f.rechain()


def _file_drop_last_write(f: Lines, *, keep_seal: bool = False) -> None:
    seals = [i for i, x in enumerate(f.lines) if x['t'] == 'seal']
    cut = seals[-2] + 1
    f.lines = f.lines[:cut] + ([f.lines[-1]] if keep_seal else [])


def _file_remove_seals(f: Lines) -> None:
    f.lines = [x for x in f.lines if x['t'] != 'seal']


FILE_ATTACKS: dict[str, tuple[Callable[[Lines], None], str]] = {
    'edit a message body, re-chained': (_file_edit_body, 'seal_invalid'),
    'flip a batch provenance client to server': (
        lambda f: [b.update(provenance='server') for b in f.of('batch')],
        'seal_invalid',
    ),
    'append a forged outcome receipt': (
        lambda f: f.lines.append(dict(f.of('outcome')[0], strength='outcome')),
        'record_unsealed',
    ),
    'insert a forged receipt mid-file': (lambda f: f.lines.insert(3, dict(f.of('outcome')[0])), 'seal_invalid'),
    'strengthen a receipt': (lambda f: f.of('outcome')[0].update(strength='outcome'), 'seal_invalid'),
    'move the deadline of a wait': (
        lambda f: f.of('wait')[0].update(deadline='2099-01-01T00:00:00+00:00'),
        'seal_invalid',
    ),
    'mark a ledger entry completed': (lambda f: f.of('effect')[0].update(status='completed'), 'seal_invalid'),
    'lift the quarantine': (lambda f: f.of('quarantine')[0].update(report=None), 'seal_invalid'),
    'move to another scope': (lambda f: f.lines[0].update(scope='tenant-b'), 'seal_invalid'),
    'truncate the last write with its seal': (_file_drop_last_write, 'truncated'),
    'truncate the last write, keeping its seal': (
        lambda f: _file_drop_last_write(f, keep_seal=True),
        'seal_invalid',
    ),
    'remove every seal': (_file_remove_seals, 'truncated'),
}


@pytest.mark.parametrize('attack', list(FILE_ATTACKS))
def test_a_direct_edit_of_the_json_lines_is_detected(tmp_path: Path, attack: str) -> None:
    seal = StoreSeal.in_directory(tmp_path / 'keys')
    store = FileStore(tmp_path / 'files', seal=seal).sync
    populate(store)
    assert store.verify(CID, scope=SCOPE).ok
    edit, code = FILE_ATTACKS[attack]
    lines = Lines(tmp_path / 'files')
    edit(lines)
    lines.save()
    fresh = FileStore(tmp_path / 'files', seal=seal).sync  # no cache of what the file said before
    scope = 'tenant-b' if attack == 'move to another scope' else SCOPE
    check = fresh.verify(CID, scope=scope)
    assert not check.ok and check.code == code, (attack, check)
    if code == 'truncated':
        assert check.tip == 'truncated'


def test_restoring_an_older_copy_of_a_conversation_file_is_reported_as_truncated(tmp_path: Path) -> None:
    seal = StoreSeal.in_directory(tmp_path / 'keys')
    store = FileStore(tmp_path / 'files', seal=seal).sync
    store.append(CID, turn(0, conversation_id=CID), scope=SCOPE)
    [path] = (tmp_path / 'files' / 'conversations').glob('*.jsonl')
    old = path.read_bytes()
    store.append(CID, turn(1, conversation_id=CID), scope=SCOPE)
    path.write_bytes(old)
    check = FileStore(tmp_path / 'files', seal=seal).sync.verify(CID, scope=SCOPE)
    assert not check.ok and check.tip == 'truncated'


# -- keys -------------------------------------------------------------------------------------


def test_a_store_refuses_to_open_without_a_required_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from threadline.exceptions import UserError

    monkeypatch.setenv('THREADLINE_HOME', str(tmp_path / 'home'))
    monkeypatch.setenv('THREADLINE_REQUIRE_STORE_KEY', '1')
    with pytest.raises(UserError, match='THREADLINE_REQUIRE_STORE_KEY'):
        SQLiteStore(tmp_path / 'a.db')
    monkeypatch.setenv('THREADLINE_STORE_KEYS', 'prod-1=' + '11' * 32)
    store = SQLiteStore(tmp_path / 'a.db')
    store.sync.append(CID, turn(0, conversation_id=CID), scope=SCOPE)
    check = store.sync.verify(CID, scope=SCOPE)
    assert check.ok and check.key_id == 'prod-1'
    assert '11' * 32 not in repr(store.sync.seal) + repr(check)  # type: ignore[attr-defined]


def test_the_per_install_key_is_created_once_outside_the_data_with_0600(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / 'config' / 'threadline'
    monkeypatch.setenv('THREADLINE_HOME', str(home))
    SQLiteStore(tmp_path / 'data' / 'a.db').sync.append(CID, turn(0, conversation_id=CID), scope=SCOPE)
    key = home / 'store-keys.json'
    assert key.stat().st_mode & 0o777 == 0o600
    assert not list((tmp_path / 'data').glob('*key*'))
    before = key.read_bytes()
    store = SQLiteStore(tmp_path / 'data' / 'b.db')
    assert key.read_bytes() == before and store.sync.seal.source == str(key)  # type: ignore[attr-defined]


def test_a_rotated_key_still_verifies_what_it_sealed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('THREADLINE_HOME', str(tmp_path / 'home'))
    monkeypatch.setenv('THREADLINE_STORE_KEYS', 'k1=' + '11' * 32)
    SQLiteStore(tmp_path / 'a.db').sync.append(CID, turn(0, conversation_id=CID), scope=SCOPE)
    monkeypatch.setenv('THREADLINE_STORE_KEYS', 'k2=' + '22' * 32 + ',k1=' + '11' * 32)
    store = SQLiteStore(tmp_path / 'a.db').sync
    store.append(CID, turn(1, conversation_id=CID), scope=SCOPE)
    check = store.verify(CID, scope=SCOPE)
    assert check.ok and check.key_id == 'k2'
    monkeypatch.setenv('THREADLINE_STORE_KEYS', 'k2=' + '22' * 32)  # k1 dropped from the configuration
    check = SQLiteStore(tmp_path / 'a.db').sync.verify(CID, scope=SCOPE)
    assert not check.ok and check.code == 'unknown_key' and 'k1' in (check.reason or '')


# -- the audit --------------------------------------------------------------------------------


def test_the_audit_no_longer_turns_a_forged_provenance_into_ready(tmp_path: Path) -> None:
    """Before the seal, flipping a client batch to 'server' turned UNTRUSTED_HISTORY into READY."""
    from threadline.audit import AuditContext, PromptContract, audit_history

    seal = StoreSeal.in_directory(tmp_path / 'keys')
    store = SQLiteStore(tmp_path / 'a.db', seal=seal)
    store.sync.append(CID, turn(0, conversation_id=CID), scope=SCOPE, provenance='client')
    context = AuditContext(
        source='store', store=store, scope=SCOPE, conversation_id=CID, prompt_contract=PromptContract.unchecked()
    )

    report = audit_history(store.sync.load(CID, scope=SCOPE), context)
    assert report.verdict == 'UNTRUSTED_HISTORY'
    serialization = next(g for g in report.gates if g.gate == 'serialization')
    assert serialization.evidence['seal'] == 'ok' and serialization.evidence['store_key'] == seal.key_id

    db = sqlite3.connect(tmp_path / 'a.db')
    db.execute("UPDATE batches SET provenance = 'server'")
    db.commit()
    report = audit_history(store.sync.load(CID, scope=SCOPE), context)
    assert report.verdict != 'READY' and 'SERIALIZATION_FAILURE' in report.failures
    serialization = next(g for g in report.gates if g.gate == 'serialization')
    assert serialization.evidence['seal'] == 'record_changed'
    authority = next(g for g in report.gates if g.gate == 'authority')
    assert not authority.passed and authority.evidence['sealed'] is False
    assert 'question' not in json.dumps([g.evidence for g in report.gates])  # content-free


# -- the re-chain migration -------------------------------------------------------------------


def _as_before_seals(db: SQL) -> None:
    """Make the database look like one written before seals existed (without the seals migration)."""
    db('DROP TABLE seals')
    db("DELETE FROM threadline_meta WHERE key = 'seals'")
    db("DELETE FROM threadline_schema_migrations WHERE name = 'seals'")


@pytest.mark.parametrize('backend', ['sqlite', pytest.param('postgres', marks=needs_postgres)])
def test_an_existing_store_is_sealed_once_and_records_it(tmp_path: Path, backend: str) -> None:
    def open_store(seal: StoreSeal) -> SyncStore:
        if backend == 'sqlite':
            return SQLiteStore(tmp_path / 'old.db', seal=seal).sync
        from threadline.storage import PostgresStore

        assert POSTGRES_URL
        return PostgresStore(POSTGRES_URL, seal=seal).sync

    if backend == 'postgres':
        fresh_postgres_url()
    writer = open_store(StoreSeal.in_directory(tmp_path / 'first-keys'))
    populate(writer)
    writer.close()
    conn: Any
    if backend == 'sqlite':
        conn, placeholder = sqlite3.connect(tmp_path / 'old.db'), '?'
    else:
        import psycopg

        conn, placeholder = psycopg.connect(POSTGRES_URL), '%s'
    db = SQL(conn, placeholder)
    _as_before_seals(db)

    seal = StoreSeal.in_directory(tmp_path / 'keys')  # this install has never seen the store
    store = open_store(seal)
    [(record,)] = db("SELECT value FROM threadline_meta WHERE key = 'seals'")
    assert json.loads(record)['adopted'] == 1 and json.loads(record)['key_id'] == seal.key_id
    check = store.verify(CID, scope=SCOPE)
    assert check.ok and check.seals == 1 and check.tip == 'current'
    store.quarantine(CID, scope=SCOPE, report=None)  # later writes chain on
    assert store.verify(CID, scope=SCOPE).seals == 2
    store.close()

    # Remove the seals and the record again: the tip book saw the adoption, so nothing is re-blessed.
    db('DELETE FROM seals')
    db("DELETE FROM threadline_meta WHERE key = 'seals'")
    again = open_store(seal)
    [(record,)] = db("SELECT value FROM threadline_meta WHERE key = 'seals'")
    assert json.loads(record)['adopted'] == 0 and json.loads(record)['book_saw']
    assert not again.verify(CID, scope=SCOPE).ok
    again.close()
    conn.close()


# -- no false alarms --------------------------------------------------------------------------

_OPS = st.lists(
    st.sampled_from(
        ['append', 'client', 'replace', 'fork', 'receipt', 'wait', 'resolve', 'effect', 'quarantine', 'delete']
    ),
    min_size=1,
    max_size=14,
)


@pytest.mark.parametrize('backend', ['sqlite', 'file'])
@settings(max_examples=examples(150))
@given(ops=_OPS)
def test_every_honest_sequence_of_writes_verifies(backend: str, ops: list[str], tmp_path_factory: Any) -> None:
    """Whatever the store API does (appends, rewrites, forks, deleting a fork's parent, receipts,
    waits, ledger rows, quarantine), every conversation left verifies, with its tip current."""
    root = tmp_path_factory.mktemp('honest')
    seal = StoreSeal.in_directory(root / 'keys')
    store: SyncStore = (
        SQLiteStore(root / 's.db', seal=seal) if backend == 'sqlite' else FileStore(root / 'f', seal=seal)
    ).sync
    live = ['c0']
    store.append('c0', turn(0, conversation_id='c0'), scope=SCOPE)
    for step, op in enumerate(ops, start=1):
        cid = live[step % len(live)]
        if store.load(cid, scope=SCOPE).quarantined and op in ('append', 'client', 'replace'):
            store.quarantine(cid, scope=SCOPE, report=None)
        if op in ('append', 'client'):
            provenance = 'client' if op == 'client' else 'server'
            store.append(cid, turn(step, conversation_id=cid), scope=SCOPE, provenance=provenance)
        elif op == 'replace':
            stored = store.load(cid, scope=SCOPE)
            rewritten = stored.messages[:4] + turn(step, conversation_id=cid)
            store.replace(cid, rewritten, scope=SCOPE, expected_revision=stored.revision)
        elif op == 'fork':
            live.append(store.fork(cid, scope=SCOPE, at=4, new_id=f'f{step}'))
        elif op == 'receipt':
            store.record_outcome(cid, scope=SCOPE, run_id=None, expected_effect='x', strength='outcome')
        elif op in ('wait', 'resolve'):
            store.record_wait(
                cid, scope=SCOPE, run_id=None, owner='o', decision='d', deadline=T, resume_token=f'r{step}'
            )
            if op == 'resolve':
                store.resolve_wait(cid, scope=SCOPE, resume_token=f'r{step}')
        elif op == 'effect':
            effect = ToolEffect(f'run-e{step}', f'call-{step}', 'tool', 'completed', T)
            store.record_tool_effect(effect, conversation_id=cid, scope=SCOPE)
        elif op == 'quarantine':
            store.quarantine(cid, scope=SCOPE, report={'verdict': 'x'})
        elif op == 'delete' and len(live) > 1:
            store.delete(cid, scope=SCOPE)
            live.remove(cid)
    for cid in live:
        check = store.verify(cid, scope=SCOPE)
        assert check.ok and check.tip == 'current', (ops, cid, check)
    store.close()


def test_an_edit_on_a_branch_a_rewrite_left_behind_is_detected(tmp_path: Path) -> None:
    """The current history is re-hashed along its lineage; an older branch's messages are
    re-hashed against their own sealed batch links."""
    seal = StoreSeal.in_directory(tmp_path / 'keys')
    store = SQLiteStore(tmp_path / 'a.db', seal=seal).sync
    store.append(CID, turn(0, conversation_id=CID), scope=SCOPE)
    store.append(CID, turn(1, conversation_id=CID), scope=SCOPE)
    stored = store.load(CID, scope=SCOPE)
    store.replace(CID, stored.messages[:4], scope=SCOPE, expected_revision=stored.revision)
    assert store.verify(CID, scope=SCOPE).ok
    db = SQL(sqlite3.connect(tmp_path / 'a.db'), '?')
    [(old_branch,)] = db('SELECT branch_id FROM batches WHERE start = 4')
    db(
        "UPDATE messages SET body = replace(body, 'question 1', 'question 9') WHERE branch_id = ? AND position = 4",
        old_branch,
    )
    check = store.verify(CID, scope=SCOPE)
    assert not check.ok and check.code == 'message_changed' and f'branch {old_branch}' in (check.record or '')
