"""Every backend passes the conformance suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.storage.conftest import fresh_postgres_url, needs_postgres
from threadline.storage import AsyncStore, FileStore, MemoryStore, SQLiteStore, SyncStore
from threadline.storage.testing import ConversationStoreConformance


class TestMemoryStore(ConversationStoreConformance):
    def make_store(self) -> AsyncStore[SyncStore]:
        return MemoryStore()


class TestSQLiteStore(ConversationStoreConformance):
    @pytest.fixture(autouse=True)
    def _tmp(self, tmp_path: Path) -> None:
        self.path = tmp_path / 'threadline.db'

    def make_store(self) -> AsyncStore[SyncStore]:
        return SQLiteStore(self.path)


class TestFileStore(ConversationStoreConformance):
    @pytest.fixture(autouse=True)
    def _tmp(self, tmp_path: Path) -> None:
        self.path = tmp_path / 'files'

    def make_store(self) -> AsyncStore[SyncStore]:
        return FileStore(self.path)


@needs_postgres
class TestPostgresStore(ConversationStoreConformance):
    def make_store(self) -> AsyncStore[SyncStore]:
        from threadline.storage import PostgresStore

        return PostgresStore(fresh_postgres_url())
