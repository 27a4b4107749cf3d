"""The replay audit: is a stored (or client-supplied) history safe to act on?

Six independent gates (serialization, authority, prompt continuity, tool honesty, scope, outcome),
a headline verdict, and the records they read: outcome receipts, wait records, the tool ledger,
and content-free audit events. See `_report.py` for the verdict precedence and why.

    report = audit_history(stored, AuditContext(source='store', store=store, scope='acme',
                                                conversation_id=cid, prompt_contract=contract))
    report.verdict  # 'READY', 'INTERRUPTED_TOOL', ...
"""

from __future__ import annotations

from threadline._public import publish
from threadline.audit._audit import audit_history
from threadline.audit._context import AuditContext
from threadline.audit._contract import PromptContract, keyed_hash
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
    'keyed_hash',
    'reconcile_tool_call',
    'release_quarantine',
    'record_repair_events',
    'sanitize_loaded',
]


publish(__name__, globals(), __all__)  # after every name above exists
