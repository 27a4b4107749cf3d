"""The store interfaces, as typing Protocols a user can implement on their own database.

Every method is async; implementations also expose `sync`, an object with the same operations
synchronously. `threadline.storage.testing` holds the conformance suite an implementation runs.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from ..messages import ModelMessage, RunUsage
from ._records import (
    ChainCheck,
    ConversationSummary,
    Provenance,
    RunRecord,
    SearchHit,
    Snapshot,
    StepEvent,
    StoredConversation,
    ToolEffect,
)

__all__ = ['ConversationStore', 'StepStore']


@runtime_checkable
class ConversationStore(Protocol):
    """An append-only conversation log with revisions, forks, scopes, retention and search.

    Rules every implementation keeps: a `scope` is required on every call and another scope's
    conversation is reported as not found; a stale `expected_revision` raises `ConflictError` and
    writes nothing; concurrent appends never interleave; each write is one transaction.
    """

    @property
    def sync(self) -> Any: ...

    async def save(
        self, result: Any, *, scope: str, conversation_id: str | None = None, expected_revision: int | None = None
    ) -> int: ...

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[ModelMessage],
        *,
        scope: str,
        expected_revision: int | None = None,
        provenance: Provenance = 'server',
    ) -> int: ...

    async def replace(
        self,
        conversation_id: str,
        messages: Sequence[ModelMessage],
        *,
        scope: str,
        expected_revision: int,
        provenance: Provenance = 'server',
    ) -> int: ...

    async def load(self, conversation_id: str, *, scope: str, last: int | None = None) -> StoredConversation: ...

    async def list(
        self, scope: str, *, limit: int = 50, offset: int = 0, query: str | None = None
    ) -> builtins.list[ConversationSummary]: ...

    async def fork(self, conversation_id: str, *, scope: str, at: int | None = None) -> str: ...

    async def delete(self, conversation_id: str, *, scope: str) -> None: ...

    async def prune(
        self, *, older_than: datetime | None = None, keep_last: int | None = None, scope: str | None = None
    ) -> builtins.list[str]: ...

    async def search(
        self, query: str, *, scope: str, conversation_id: str | None = None, limit: int = 10
    ) -> builtins.list[SearchHit]: ...

    async def verify(self, conversation_id: str, *, scope: str) -> ChainCheck: ...


@runtime_checkable
class StepStore(Protocol):
    """Run records, the event log, snapshots (positions in the log) and the tool-effect ledger."""

    async def step_write(self, conversation_id: str, **kwargs: Any) -> int: ...

    async def conversation_state(self, conversation_id: str, *, scope: str) -> tuple[int, int] | None: ...

    async def get_run(self, run_id: str) -> RunRecord | None: ...

    async def list_runs(self, conversation_id: str) -> builtins.list[RunRecord]: ...

    async def list_events(self, run_id: str) -> builtins.list[StepEvent]: ...

    async def list_snapshots(self, run_id: str) -> builtins.list[Snapshot]: ...

    async def load_at(
        self, conversation_id: str, *, scope: str, branch_id: int, position: int
    ) -> builtins.list[ModelMessage]: ...

    async def record_tool_effect(self, effect: ToolEffect, *, conversation_id: str | None) -> None: ...

    async def tool_effects(self, run_id: str) -> builtins.list[ToolEffect]: ...

    async def finish_run(
        self, run_id: str, *, status: str, output_json: str | None = None, usage: RunUsage | None = None
    ) -> None: ...
