"""Durable storage: the conversation log, step persistence and the tool-effect ledger.

    store = SQLiteStore('threadline.db')              # or PostgresStore(url), MemoryStore()
    await store.save(result, scope='tenant-1')        # appends the run's new messages
    stored = await store.load(conversation_id, scope='tenant-1')
    result = await agent.run('next', **stored.run_kwargs())

`open_store(url_or_path)` picks the backend from a string (`postgresql://...` or a file path).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from threadline._public import publish
from threadline.exceptions import (
    BackendError,
    ConflictError,
    ConversationNotFound,
    CorruptRecordError,
    RunNotFound,
    StoreError,
    UserError,
)
from threadline.storage._contract import (
    AuditStore,
    ConversationStore,
    FinishedRun,
    NotebookStore,
    StepStore,
    SyncStore,
    TurnLeases,
)
from threadline.storage._face import AsyncStore
from threadline.storage._records import (
    EVERY_SCOPE,
    AuditEvent,
    BatchInfo,
    ChainCheck,
    ConversationSummary,
    EveryScope,
    Notebook,
    NotebookWrite,
    OutcomeReceipt,
    RecoveryInspection,
    RunFinish,
    RunLineage,
    RunRecord,
    RunStart,
    SearchHit,
    Snapshot,
    SnapshotMark,
    SnapshotRequest,
    StepEvent,
    StepWrite,
    StoredConversation,
    ToolEffect,
    WaitRecord,
)
from threadline.storage.file import FileBackend, FileStore
from threadline.storage.memory import MemoryStore
from threadline.storage.sql._store import SQLStore
from threadline.storage.sqlite import SQLiteStore
from threadline.trust.sealing import StoreSeal, TipBook

if TYPE_CHECKING:
    from threadline.steps import StepPersistence, annotate_tool_effect, continue_run, fork_run, inspect_recovery
    from threadline.storage.postgres import PostgresStore

# Step persistence lives in `threadline.steps`, which builds on this package; the documents import
# it from here, so these names resolve lazily (tests/test_architecture.py lists every such re-export).
_FROM_STEPS = frozenset({'StepPersistence', 'annotate_tool_effect', 'continue_run', 'fork_run', 'inspect_recovery'})

__all__ = [
    'EVERY_SCOPE',
    'EveryScope',
    'AsyncStore',
    'AuditEvent',
    'AuditStore',
    'BackendError',
    'BatchInfo',
    'ChainCheck',
    'ConflictError',
    'ConversationNotFound',
    'ConversationStore',
    'ConversationSummary',
    'CorruptRecordError',
    'FileBackend',
    'FileStore',
    'FinishedRun',
    'MemoryStore',
    'Notebook',
    'NotebookStore',
    'NotebookWrite',
    'OutcomeReceipt',
    'PostgresStore',
    'RecoveryInspection',
    'RunFinish',
    'RunLineage',
    'RunNotFound',
    'RunRecord',
    'RunStart',
    'SQLStore',
    'SQLiteStore',
    'SearchHit',
    'Snapshot',
    'SnapshotMark',
    'SnapshotRequest',
    'StepEvent',
    'StepPersistence',
    'StepStore',
    'StepWrite',
    'StoreError',
    'StoreSeal',
    'StoredConversation',
    'SyncStore',
    'TurnLeases',
    'TipBook',
    'ToolEffect',
    'WaitRecord',
    'annotate_tool_effect',
    'continue_run',
    'fork_run',
    'inspect_recovery',
    'open_store',
]


def __getattr__(name: str) -> Any:
    if name == 'PostgresStore':  # imported lazily: its driver is an optional extra
        from threadline.storage.postgres import PostgresStore

        return PostgresStore
    if name in _FROM_STEPS:
        import threadline.steps

        return getattr(threadline.steps, name)
    raise AttributeError(name)


def open_store(target: str) -> AsyncStore[SQLStore] | AsyncStore[FileBackend]:
    """A store for `target`: a `postgresql://` URL, `file:<directory>` (JSON lines), `':memory:'`,
    `sqlite:///<path>`, or a SQLite file path. Any other `scheme://` is refused (naming the ones
    that work) rather than taken as a file name."""
    if target.startswith('file:'):
        return FileStore(target.removeprefix('file:').removeprefix('//'))
    if target.startswith(('postgresql://', 'postgres://')):
        from threadline.storage.postgres import PostgresStore

        return PostgresStore(target)
    if target == ':memory:':
        return MemoryStore()
    if target.startswith('sqlite://'):
        return SQLiteStore(target.removeprefix('sqlite://').removeprefix('/') or ':memory:')
    scheme = re.match(r'([A-Za-z][A-Za-z0-9+.-]*)://', target)
    if scheme:
        raise UserError(
            f'unknown store URL scheme {scheme.group(1)!r} in {target!r}: use postgresql://..., '
            'sqlite:///path, file:<directory>, :memory:, or a SQLite file path'
        )
    return SQLiteStore(target)


publish(__name__, globals(), __all__)  # after every name above exists
