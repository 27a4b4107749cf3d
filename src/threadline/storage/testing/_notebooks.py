"""Conformance for notebooks (`NotebookStore`): versions, compare-and-set, receipts, scopes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from threadline.exceptions import ConflictError, UserError
from threadline.storage._contract import SyncStore
from threadline.storage._face import AsyncStore

__all__ = ['NotebookConformance']


class NotebookConformance:
    """Behaviours of `read_notebook`, `write_notebook` and `delete_notebook`."""

    def test_a_notebook_is_written_by_version(self, store: AsyncStore[SyncStore]) -> None:
        sync = store.sync
        assert sync.read_notebook('alice', scope='s') is None
        assert sync.write_notebook('alice', '## a\nx\n', scope='s', expected_version=0).version == 1
        with pytest.raises(ConflictError):  # a write made from a stale read
            sync.write_notebook('alice', 'lost', scope='s', expected_version=0)
        second = sync.write_notebook('alice', '## a\ny\n', scope='s', expected_version=1)
        notebook = sync.read_notebook('alice', scope='s')
        assert notebook is not None and (notebook.content, notebook.version) == ('## a\ny\n', 2) == (
            '## a\ny\n',
            second.version,
        )
        assert notebook.namespace == 'alice' and notebook.updated_at.tzinfo is not None

    def test_a_retried_operation_applies_once(self, store: AsyncStore[SyncStore]) -> None:
        sync = store.sync
        first = sync.write_notebook('bob', 'one', scope='s', expected_version=0, operation_id='run-1:call-1')
        again = sync.write_notebook('bob', 'one', scope='s', expected_version=0, operation_id='run-1:call-1')
        assert (first.version, first.replayed, again.version, again.replayed) == (1, False, 1, True)
        notebook = sync.read_notebook('bob', scope='s')
        assert notebook is not None and notebook.version == 1

    def test_scopes_and_namespaces_are_separate_and_delete_erases(self, store: AsyncStore[SyncStore]) -> None:
        sync = store.sync
        sync.write_notebook('carol', 'mine', scope='s', expected_version=0)
        assert sync.read_notebook('carol', scope='other') is None
        assert sync.read_notebook('dave', scope='s') is None
        assert sync.write_notebook('carol', 'theirs', scope='other', expected_version=0).version == 1
        notebook = sync.read_notebook('carol', scope='s')
        assert notebook is not None and notebook.content == 'mine'
        assert sync.delete_notebook('carol', scope='s') and not sync.delete_notebook('carol', scope='s')
        assert sync.read_notebook('carol', scope='s') is None
        assert sync.write_notebook('carol', 'again', scope='s', expected_version=0).version == 1  # receipts gone too
        for bad in ('', None):
            with pytest.raises(UserError):
                sync.read_notebook(bad, scope='s')  # type: ignore[arg-type]
        with pytest.raises(UserError):
            sync.read_notebook('carol', scope='')

    def test_prune_by_age_erases_old_notebooks_of_the_scope(self, store: AsyncStore[SyncStore]) -> None:
        sync = store.sync
        sync.write_notebook('erin', 'old notes', scope='s', expected_version=0)
        sync.write_notebook('erin', 'kept', scope='other', expected_version=0)
        sync.prune(older_than=datetime.now(tz=UTC) - timedelta(days=1), scope='s')
        assert sync.read_notebook('erin', scope='s') is not None  # written since: kept
        sync.prune(older_than=datetime.now(tz=UTC) + timedelta(seconds=1), scope='s')
        assert sync.read_notebook('erin', scope='s') is None
        assert sync.read_notebook('erin', scope='other') is not None  # another scope's stays
