"""The async face of a store: each operation runs its synchronous core in a worker thread, so a
slow disk or database never blocks the event loop. `store.sync` offers the same operations
synchronously (scripts, the CLI)."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any

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

__all__ = ['AsyncStoreMixin', 'SyncView']


class SyncView:
    """The store's operations, synchronous: `store.sync.load(conversation_id, scope=...)`."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, f'{name}_sync', None)
        if method is None:
            raise AttributeError(f'{type(self._store).__name__} has no operation {name!r}')
        return method


class AsyncStoreMixin:
    """Async methods over the `*_sync` core methods of a store."""

    @property
    def sync(self) -> Any:
        """The same operations, synchronous."""
        return SyncView(self)

    async def _run(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(getattr(self, f'{name}_sync'), *args, **kwargs)

    async def save(
        self, result: Any, *, scope: str, conversation_id: str | None = None, expected_revision: int | None = None
    ) -> int:
        """Append a run's new messages and its run record; returns the new revision."""
        return await self._run(
            'save',
            result,
            scope=scope,
            conversation_id=conversation_id,
            expected_revision=expected_revision,
        )

    async def append(
        self,
        conversation_id: str,
        messages: Sequence[ModelMessage],
        *,
        scope: str,
        expected_revision: int | None = None,
        provenance: Provenance = 'server',
    ) -> int:
        """Append a batch after the stored tip; returns the new revision."""
        return await self._run(
            'append',
            conversation_id,
            messages,
            scope=scope,
            expected_revision=expected_revision,
            provenance=provenance,
        )

    async def replace(
        self,
        conversation_id: str,
        messages: Sequence[ModelMessage],
        *,
        scope: str,
        expected_revision: int,
        provenance: Provenance = 'server',
    ) -> int:
        """Store a rewritten history as a new branch; returns the new revision."""
        return await self._run(
            'replace',
            conversation_id,
            messages,
            scope=scope,
            expected_revision=expected_revision,
            provenance=provenance,
        )

    async def load(self, conversation_id: str, *, scope: str, last: int | None = None) -> StoredConversation:
        return await self._run('load', conversation_id, scope=scope, last=last)

    async def list(
        self, scope: str, *, limit: int = 50, offset: int = 0, query: str | None = None
    ) -> builtins.list[ConversationSummary]:
        return await self._run('list', scope, limit=limit, offset=offset, query=query)

    async def fork(self, conversation_id: str, *, scope: str, at: int | None = None) -> str:
        return await self._run('fork', conversation_id, scope=scope, at=at)

    async def delete(self, conversation_id: str, *, scope: str) -> None:
        await self._run('delete', conversation_id, scope=scope)

    async def prune(
        self, *, older_than: datetime | None = None, keep_last: int | None = None, scope: str | None = None
    ) -> builtins.list[str]:
        return await self._run('prune', older_than=older_than, keep_last=keep_last, scope=scope)

    async def search(
        self, query: str, *, scope: str, conversation_id: str | None = None, limit: int = 10
    ) -> builtins.list[SearchHit]:
        return await self._run('search', query, scope=scope, conversation_id=conversation_id, limit=limit)

    async def verify(self, conversation_id: str, *, scope: str) -> ChainCheck:
        return await self._run('verify', conversation_id, scope=scope)

    async def raw_history(self, conversation_id: str, *, scope: str) -> bytes:
        return await self._run('raw_history', conversation_id, scope=scope)

    # step store
    async def register_run(self, run_id: str, *, conversation_id: str, model_name: str | None = None) -> None:
        await self._run('register_run', run_id, conversation_id=conversation_id, model_name=model_name)

    async def finish_run(
        self, run_id: str, *, status: str, output_json: str | None = None, usage: RunUsage | None = None
    ) -> None:
        await self._run('finish_run', run_id, status=status, output_json=output_json, usage=usage)

    async def get_run(self, run_id: str) -> RunRecord | None:
        return await self._run('get_run', run_id)

    async def list_runs(self, conversation_id: str) -> builtins.list[RunRecord]:
        return await self._run('list_runs', conversation_id)

    async def append_event(self, event: StepEvent, *, conversation_id: str | None) -> None:
        await self._run('append_event', event, conversation_id=conversation_id)

    async def list_events(self, run_id: str) -> builtins.list[StepEvent]:
        return await self._run('list_events', run_id)

    async def save_snapshot(
        self, *, run_id: str, conversation_id: str, scope: str, state: str, step_index: int, idempotency_key: str | None
    ) -> Snapshot:
        return await self._run(
            'save_snapshot',
            run_id=run_id,
            conversation_id=conversation_id,
            scope=scope,
            state=state,
            step_index=step_index,
            idempotency_key=idempotency_key,
        )

    async def list_snapshots(self, run_id: str) -> builtins.list[Snapshot]:
        return await self._run('list_snapshots', run_id)

    async def record_tool_effect(self, effect: ToolEffect, *, conversation_id: str | None) -> None:
        await self._run('record_tool_effect', effect, conversation_id=conversation_id)

    async def tool_effects(self, run_id: str) -> builtins.list[ToolEffect]:
        return await self._run('tool_effects', run_id)

    async def step_write(self, conversation_id: str, **kwargs: Any) -> int:
        """One StepPersistence boundary in one transaction (see `step_write_sync`)."""
        return await self._run('step_write', conversation_id, **kwargs)

    async def conversation_state(self, conversation_id: str, *, scope: str) -> tuple[int, int] | None:
        return await self._run('conversation_state', conversation_id, scope=scope)

    async def load_at(
        self, conversation_id: str, *, scope: str, branch_id: int, position: int
    ) -> builtins.list[ModelMessage]:
        return await self._run('load_at', conversation_id, scope=scope, branch_id=branch_id, position=position)

    # audit records
    async def audit_key(self) -> bytes:
        return await self._run('audit_key')

    async def record_outcome(self, conversation_id: str, **kwargs: Any) -> Any:
        """Store an outcome receipt for a run (see `OutcomeReceipt`)."""
        return await self._run('record_outcome', conversation_id, **kwargs)

    async def outcomes(self, conversation_id: str, *, scope: str) -> Any:
        return await self._run('outcomes', conversation_id, scope=scope)

    async def record_wait(self, conversation_id: str, **kwargs: Any) -> Any:
        """Record that a run waits on a decision (see `WaitRecord`)."""
        return await self._run('record_wait', conversation_id, **kwargs)

    async def resolve_wait(self, conversation_id: str, *, scope: str, resume_token: str) -> None:
        await self._run('resolve_wait', conversation_id, scope=scope, resume_token=resume_token)

    async def waits(self, conversation_id: str, *, scope: str) -> Any:
        return await self._run('waits', conversation_id, scope=scope)

    async def record_audit_events(self, conversation_id: str, events: Any, *, scope: str) -> None:
        await self._run('record_audit_events', conversation_id, events, scope=scope)

    async def audit_events(self, conversation_id: str, *, scope: str) -> Any:
        return await self._run('audit_events', conversation_id, scope=scope)

    async def quarantine(self, conversation_id: str, *, scope: str, report: Any) -> None:
        await self._run('quarantine', conversation_id, scope=scope, report=report)
