"""Durable storage: the conversation log, step persistence and the tool-effect ledger.

    store = SQLiteStore('threadline.db')              # or PostgresStore(url), MemoryStore()
    await store.save(result, scope='tenant-1')        # appends the run's new messages
    stored = await store.load(conversation_id, scope='tenant-1')
    result = await agent.run('next', **stored.run_kwargs())

`open_store(url_or_path)` picks the backend from a string (`postgresql://...` or a file path).
"""

from __future__ import annotations

from typing import Any

from ..exceptions import BackendError, ConflictError, ConversationNotFound, CorruptRecordError, StoreError
from ._protocols import ConversationStore, StepStore
from ._records import (
    AuditEvent,
    BatchInfo,
    ChainCheck,
    ConversationSummary,
    OutcomeReceipt,
    RecoveryInspection,
    RunRecord,
    SearchHit,
    Snapshot,
    StepEvent,
    StoredConversation,
    ToolEffect,
    WaitRecord,
)
from ._step import StepPersistence, annotate_tool_effect, continue_run, fork_run, inspect_recovery
from .file import FileStore
from .memory import MemoryStore
from .sqlite import SQLiteStore

__all__ = [
    'AuditEvent',
    'BackendError',
    'BatchInfo',
    'ChainCheck',
    'ConflictError',
    'ConversationNotFound',
    'ConversationStore',
    'ConversationSummary',
    'CorruptRecordError',
    'FileStore',
    'MemoryStore',
    'OutcomeReceipt',
    'PostgresStore',
    'RecoveryInspection',
    'RunRecord',
    'SQLiteStore',
    'SearchHit',
    'Snapshot',
    'StepEvent',
    'StepPersistence',
    'StepStore',
    'StoreError',
    'StoredConversation',
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
        from .postgres import PostgresStore

        return PostgresStore
    raise AttributeError(name)


def open_store(target: str) -> Any:
    """A store for `target`: a `postgresql://` URL, `file:<directory>` (JSON lines), `':memory:'`,
    or a SQLite file path."""
    if target.startswith('file:'):
        return FileStore(target.removeprefix('file:').removeprefix('//'))
    if target.startswith(('postgresql://', 'postgres://')):
        from .postgres import PostgresStore

        return PostgresStore(target)
    if target == ':memory:':
        return MemoryStore()
    return SQLiteStore(target)
