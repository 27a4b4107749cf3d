"""The audit endpoint's answer: the report of a stored conversation, as the page shows it."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from threadline.audit import AuditContext, PromptContract, audit_history, effect_tools_of
from threadline.storage import AsyncStore, StoredConversation, SyncStore

__all__ = ['ServerAudit']


@dataclass
class ServerAudit:
    """How this server audits: `expect_outcome` (every last run owes a receipt) and the served
    agent's tools marked with external effects. The prompt is not checked: the server cannot know
    which system prompt an agent that wrote an older turn required."""

    expect_outcome: bool = False
    effect_tools: Collection[str] = ()

    @classmethod
    def of(cls, agent: object, *, expect_outcome: bool) -> ServerAudit:
        inner = getattr(agent, 'agent', agent)  # a ServedAgent wraps the pydantic-ai agent
        return cls(expect_outcome, effect_tools_of(inner))

    def report(self, store: AsyncStore[SyncStore], scope: str, cid: str, stored: StoredConversation) -> dict[str, Any]:
        """Verdict, failures, each gate's result, and `outcome`: which case of the outcome gate
        applied (`'none'`: no outcome expected; `'declared'`, `'effect_tool'`, `'receipt'`; None
        when the gate did not get that far). Content-free, like the report."""
        context = AuditContext(
            source='store',
            store=store,
            scope=scope,
            conversation_id=cid,
            prompt_contract=PromptContract.unchecked(),
            expect_outcome=self.expect_outcome,
            effect_tools=self.effect_tools,
        )
        report = audit_history(stored, context)
        gates = [{'gate': g.gate, 'passed': g.passed, 'verdicts': list(g.verdicts)} for g in report.gates]
        outcome = report.gate('outcome').evidence.get('expected')
        return {'verdict': report.verdict, 'failures': list(report.failures), 'gates': gates, 'outcome': outcome}
