"""Stores, seals and envelopes written before the remodel (commit eae2017, numbered migrations)
open, upgrade and verify unchanged: every chain link, seal and signature written then still checks,
and each store takes a new turn afterwards (tests/data/legacy_stores.py made the fixture)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.data import legacy_stores
from tests.storage.conftest import fresh_postgres_url, needs_postgres
from threadline.messages import ModelMessagesTypeAdapter
from threadline.storage import FileStore, SQLiteStore
from threadline.storage.migrations import MIGRATIONS
from threadline.storage.testing import turn
from threadline.trust import Envelope, Keyring, verify_history

FIXTURE = Path(__file__).resolve().parents[1] / 'data' / 'legacy_0_2'
EXPECTED = json.loads((FIXTURE / 'expected.json').read_text())


@pytest.fixture(autouse=True)
def fixture_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('THREADLINE_STORE_KEYS', legacy_stores.STORE_KEYS)
    monkeypatch.setenv('THREADLINE_HOME', str(tmp_path / 'home'))
    monkeypatch.setenv('THREADLINE_AUDIT_KEY', 'fixture-audit-key')


def seen(store: Any) -> dict[str, Any]:
    described: dict[str, Any] = json.loads(json.dumps(legacy_stores.describe(store), default=str))
    return described


def then_a_new_turn_is_sealed_too(store: Any) -> None:
    sync = store.sync
    revision = sync.load('conv-a', scope=legacy_stores.SCOPE).revision
    sync.append('conv-a', turn(9, conversation_id='conv-a'), scope=legacy_stores.SCOPE, expected_revision=revision)
    check = sync.verify('conv-a', scope=legacy_stores.SCOPE)
    assert (check.ok, check.checked, check.key_id) == (True, 12, 'fixture'), check
    assert check.seals == EXPECTED['sqlite']['conv-a']['verify'][5] + 1


def test_a_sqlite_store_from_numbered_migrations_opens_upgrades_and_verifies(tmp_path: Path) -> None:
    shutil.copy(FIXTURE / 'threadline.db', tmp_path / 'threadline.db')
    store = SQLiteStore(tmp_path / 'threadline.db')
    assert seen(store) == EXPECTED['sqlite']
    assert store.migrations() == [m.name for m in MIGRATIONS]  # the numbers were read as names
    then_a_new_turn_is_sealed_too(store)
    store.close()
    assert SQLiteStore(tmp_path / 'threadline.db').migrations() == [m.name for m in MIGRATIONS]


def test_a_file_store_from_before_the_remodel_loads_and_verifies(tmp_path: Path) -> None:
    shutil.copytree(FIXTURE / 'files', tmp_path / 'files')
    store = FileStore(tmp_path / 'files')
    assert seen(store) == EXPECTED['file']
    then_a_new_turn_is_sealed_too(store)


@needs_postgres
def test_a_postgres_store_from_numbered_migrations_opens_upgrades_and_verifies() -> None:
    import psycopg

    from threadline.storage import PostgresStore

    url = fresh_postgres_url()
    script = '\n'.join(
        line for line in (FIXTURE / 'postgres.sql').read_text().splitlines() if not line.startswith('\\')
    )  # psql's own commands (\restrict) are not SQL
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute('DROP SCHEMA public CASCADE')
        conn.execute(script.encode())
    store = PostgresStore(url)
    try:
        assert seen(store) == EXPECTED['postgres']
        assert store.migrations() == [m.name for m in MIGRATIONS]
        then_a_new_turn_is_sealed_too(store)
    finally:
        store.close()


def test_an_envelope_signed_before_the_remodel_verifies() -> None:
    history = ModelMessagesTypeAdapter.validate_json((FIXTURE / 'envelope_history.json').read_bytes())
    envelope = Envelope.from_json((FIXTURE / 'envelope.json').read_bytes())
    keys = Keyring.single(legacy_stores.TRUST_SECRET, key_id='k1')
    check = verify_history(history, envelope, conversation_id='conv-a', scope=legacy_stores.SCOPE, keys=keys)
    assert (check.ok, check.reason) == (True, None)
    history[0].parts[0].content = 'edited'  # type: ignore[union-attr]
    assert not verify_history(history, envelope, conversation_id='conv-a', scope=legacy_stores.SCOPE, keys=keys).ok
