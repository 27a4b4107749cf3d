"""The tool call running now under StepPersistence (`CURRENT_TOOL`), and what a tool body says
to its ledger row through it: `annotate_tool_effect` records how to find the call's effect, and
`recorded_idempotency_key` reads back what was recorded (for a tool run again after a crash)."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from threadline.steps._log import RunLog
from threadline.storage import AsyncStore, SyncStore, ToolEffect

if TYPE_CHECKING:
    from threadline.agent import RunContext

__all__ = ['CURRENT_TOOL', 'ToolScope', 'annotate_tool_effect', 'recorded_idempotency_key']


@dataclass(frozen=True)
class ToolScope:
    """The tool call StepPersistence is recording, as a tool body reaches it."""

    store: AsyncStore[SyncStore]
    state: RunLog
    run_id: str
    tool_call_id: str
    tool_name: str
    started_at: datetime


CURRENT_TOOL: contextvars.ContextVar[ToolScope | None] = contextvars.ContextVar('threadline_tool_scope', default=None)


def recorded_idempotency_key() -> str | None:
    """The idempotency key the ledger holds for the tool call running now (what
    `annotate_tool_effect` recorded, on this attempt or one the process died in), or None: how
    a durability engine tells a tool run again after a crash which key to look its effect up by."""
    scope = CURRENT_TOOL.get()
    if scope is None:
        return None
    effects = scope.store.sync.tool_effects(scope.run_id, scope=scope.state.scope)
    return next((e.idempotency_key for e in effects if e.tool_call_id == scope.tool_call_id), None)


def annotate_tool_effect(
    ctx: RunContext[Any] | None = None, *, idempotency_key: str | None = None, summary: str | None = None
) -> None:
    """Record, before a tool's external effect, how to find that effect later (an idempotency key,
    a short summary). Durable when it returns; a no-op outside a tool run under StepPersistence.

    Call it from inside the tool body, before the side effect: after a crash the ledger row (still
    `started`) then tells the operator which key to look up at the destination.
    """
    scope = CURRENT_TOOL.get()
    if scope is None:
        return
    effect = ToolEffect(
        scope.run_id,
        scope.tool_call_id,
        scope.tool_name,
        'started',
        scope.started_at,
        idempotency_key=idempotency_key,
        summary=summary,
    )
    store = scope.store.sync
    store.record_tool_effect(effect, conversation_id=scope.state.conversation_id, scope=scope.state.scope)
