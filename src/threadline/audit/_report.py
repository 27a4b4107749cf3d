"""The audit's report: gate results with content-free evidence, and the headline verdict.

Precedence (the headline is the first failure in this order): SERIALIZATION_FAILURE,
UNTRUSTED_HISTORY, SCOPE_DRIFT, SYSTEM_PROMPT_GAP, INTERRUPTED_TOOL, ORPHAN_RESULT_REMOVED,
BLOCKED, MISSING_OUTCOME_RECEIPT; with no failure, WAITING when a valid wait record holds the run
open, else READY. Document 004 states only that authority outranks a missing receipt; the rest
of the order is Threadline's decision: authority and scope decide whether the caller may resume
at all, so no lower check may mask them; an unknown external effect (an interrupted tool) is
riskier than a dropped result; and progress questions come last.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = ['VERDICT_ORDER', 'AuditReport', 'GateResult', 'Verdict']

Verdict = Literal[
    'SERIALIZATION_FAILURE',
    'UNTRUSTED_HISTORY',
    'SCOPE_DRIFT',
    'SYSTEM_PROMPT_GAP',
    'INTERRUPTED_TOOL',
    'ORPHAN_RESULT_REMOVED',
    'BLOCKED',
    'MISSING_OUTCOME_RECEIPT',
    'WAITING',
    'READY',
]
VERDICT_ORDER: tuple[str, ...] = (
    'SERIALIZATION_FAILURE',
    'UNTRUSTED_HISTORY',
    'SCOPE_DRIFT',
    'SYSTEM_PROMPT_GAP',
    'INTERRUPTED_TOOL',
    'ORPHAN_RESULT_REMOVED',
    'BLOCKED',
    'MISSING_OUTCOME_RECEIPT',
)
GATES = ('serialization', 'authority', 'prompt_continuity', 'tool_honesty', 'scope', 'outcome')


@dataclass(frozen=True)
class GateResult:
    """One gate: passed or not, the verdicts its failure maps to, and evidence (positions, counts,
    keyed hashes of ids; never message content)."""

    gate: str
    passed: bool
    verdicts: tuple[str, ...] = ()
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AuditReport:
    """Every gate's result, the failures in precedence order, and the headline verdict."""

    verdict: str
    failures: tuple[str, ...]
    gates: tuple[GateResult, ...]
    waiting: bool = False
    history_digest: str | None = None
    messages: int = 0
    advice: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        return self.verdict == 'READY'

    def gate(self, name: str) -> GateResult:
        return next(g for g in self.gates if g.gate == name)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True, default=str)


def headline(gates: list[GateResult], waiting: bool) -> tuple[str, tuple[str, ...]]:
    failed = {v for g in gates for v in g.verdicts if not g.passed}
    failures = tuple(v for v in VERDICT_ORDER if v in failed)
    if failures:
        return failures[0], failures
    return ('WAITING' if waiting else 'READY'), ()
