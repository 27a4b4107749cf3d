"""`ReplayGate`: audit a run's history before the run acts on it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from threadline.agent.capability import CapabilityDepsT
from threadline.audit._audit import audit_history
from threadline.audit._context import AuditContext
from threadline.audit._report import AuditReport
from threadline.capabilities import AbstractCapability
from threadline.exceptions import ThreadlineError, UserError

if TYPE_CHECKING:
    from threadline.agent import RunContext

__all__ = ['ReplayGate', 'ReplayRefused']


class ReplayRefused(ThreadlineError, PermissionError):
    """The audit did not allow the run; `report` says which gates failed and what to do."""

    def __init__(self, report: AuditReport) -> None:
        self.report = report
        advice = ' '.join(report.advice)
        super().__init__(
            f'replay refused: {report.verdict} (failed: {", ".join(report.failures) or "none"}). {advice}'.strip()
        )


class ReplayGate(AbstractCapability[CapabilityDepsT]):
    """Before a run over a non-empty history, audit it and refuse the run unless the verdict is in
    `allow`. `context` is an `AuditContext` or a function of the `RunContext` building one (scope
    and store usually come from the run's deps). With `quarantine=True` a refused conversation is
    marked quarantined in the store with the (content-free) report. An interrupted tool call is
    never retried automatically: the report says to check the destination first.
    """

    def __init__(
        self,
        context: AuditContext | Callable[[Any], AuditContext],
        *,
        allow: Sequence[str] = ('READY', 'WAITING'),
        quarantine: bool = False,
    ) -> None:
        self._context = context
        self.allow = tuple(allow)
        self.quarantine = quarantine
        self.last_report: AuditReport | None = None

    async def before_run(self, ctx: RunContext[CapabilityDepsT]) -> None:
        if not ctx.messages:
            return
        context = self._context(ctx) if callable(self._context) else self._context
        report = await asyncio.to_thread(audit_history, list(ctx.messages), context)
        self.last_report = report
        if report.verdict in self.allow:
            return
        if self.quarantine and context.store is not None and context.conversation_id is not None:
            scope = context.loaded_scope or context.scope
            if scope is None:
                raise UserError("ReplayGate(quarantine=True) needs the audit context's scope to quarantine in")
            await asyncio.to_thread(
                context.store.sync.quarantine, context.conversation_id, scope=scope, report=report.to_dict()
            )
        raise ReplayRefused(report)
