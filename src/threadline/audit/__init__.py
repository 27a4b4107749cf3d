"""The replay audit: is a stored (or client-supplied) history safe to act on?

Six independent gates (serialization, authority, prompt continuity, tool honesty, scope, outcome),
a headline verdict, and the records they read: outcome receipts, wait records, the tool ledger,
and content-free audit events. See `_report.py` for the verdict precedence and why.

    report = audit_history(stored, AuditContext(source='store', store=store, scope='acme',
                                                conversation_id=cid, prompt_contract=contract))
    report.verdict  # 'READY', 'INTERRUPTED_TOOL', ...

The outcome gate asks for a receipt only where an effect was expected: the context declares it
(`expect_outcome=True`), a receipt was recorded for the run, or the run called a tool with
external effects (`effect_tools`, e.g. `effect_tools_of(agent)`). An ordinary chat passes with
"no outcome expected".
"""

from __future__ import annotations

from threadline._public import publish
from threadline.audit._audit import audit_history
from threadline.audit._context import AuditContext
from threadline.audit._contract import PromptContract, keyed_hash
from threadline.audit._effects import effect_tools_of
from threadline.audit._records import (
    audit_events_from_repair,
    audit_events_from_sanitize,
    reconcile_tool_call,
    record_repair_events,
    release_quarantine,
    sanitize_loaded,
)
from threadline.audit._replay_gate import ReplayGate, ReplayRefused
from threadline.audit._report import VERDICT_ORDER, AuditReport, GateResult

__all__ = [
    'VERDICT_ORDER',
    'AuditContext',
    'AuditReport',
    'GateResult',
    'PromptContract',
    'ReplayGate',
    'ReplayRefused',
    'audit_events_from_repair',
    'audit_events_from_sanitize',
    'audit_history',
    'effect_tools_of',
    'keyed_hash',
    'reconcile_tool_call',
    'release_quarantine',
    'record_repair_events',
    'sanitize_loaded',
]


publish(__name__, globals(), __all__)  # after every name above exists
