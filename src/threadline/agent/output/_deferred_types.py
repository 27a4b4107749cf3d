"""What a run hands back when calls wait for the application (`DeferredToolRequests`), and what
the application answers with (`DeferredToolResults`, `ToolApproved`, `ToolDenied`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from threadline.messages import ToolCallPart

__all__ = ['DeferredToolRequests', 'DeferredToolResults', 'ToolApproved', 'ToolDenied']


@dataclass
class DeferredToolRequests:
    """The output of a run that paused on tool calls the application must resolve.

    `approvals` are calls to tools declared `requires_approval=True` (or that raised
    `ApprovalRequired`); `calls` are calls the application executes itself; `metadata` is what a
    deferral carried (`CallDeferred(metadata=...)`), keyed by tool call id. Resume with
    `deferred_tool_results=` in a new run.
    """

    calls: list[ToolCallPart] = field(default_factory=list)
    approvals: list[ToolCallPart] = field(default_factory=list)
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)

    def build_results(
        self,
        *,
        approvals: dict[str, bool | ToolApproved | ToolDenied] | None = None,
        calls: dict[str, Any] | None = None,
        metadata: dict[str, dict[str, Any]] | None = None,
        approve_all: bool = False,
    ) -> DeferredToolResults:
        """The `DeferredToolResults` that answer these requests; `approve_all` approves every call
        waiting for approval that `approvals` does not name. An id that is not pending is a
        `ValueError` naming it."""
        approvals, calls = dict(approvals or {}), dict(calls or {})
        approval_ids = {c.tool_call_id for c in self.approvals}
        call_ids = {c.tool_call_id for c in self.calls}
        if extra := sorted(set(approvals) - approval_ids):
            raise ValueError(f'`approvals` names tool call ids that are not waiting for approval: {extra}')
        if extra := sorted(set(calls) - call_ids):
            raise ValueError(f'`calls` names tool call ids that are not waiting for a result: {extra}')
        if approve_all:
            approvals.update({cid: ToolApproved() for cid in approval_ids - set(approvals)})
        return DeferredToolResults(calls=calls, approvals=approvals, metadata=dict(metadata or {}))

    def answered_by(self, results: DeferredToolResults) -> DeferredToolResults:
        """`results` without the entries that answer nothing here (an approval for a call that
        waits on a result, or an id that is not pending)."""
        approval_ids = {c.tool_call_id for c in self.approvals}
        call_ids = {c.tool_call_id for c in self.calls}
        return DeferredToolResults(
            calls={k: v for k, v in results.calls.items() if k in call_ids},
            approvals={k: v for k, v in results.approvals.items() if k in approval_ids},
            metadata=results.metadata,
        )

    def remaining(self, results: DeferredToolResults) -> DeferredToolRequests | None:
        """The requests `results` leaves unanswered, or None when it answers them all."""
        results = self.answered_by(results)
        answered = {*results.calls, *results.approvals}
        left = DeferredToolRequests(
            calls=[c for c in self.calls if c.tool_call_id not in results.calls],
            approvals=[c for c in self.approvals if c.tool_call_id not in results.approvals],
            metadata={k: v for k, v in self.metadata.items() if k not in answered},
        )
        return left if left.calls or left.approvals else None


@dataclass
class ToolApproved:
    """Approve a deferred call, optionally with arguments that replace the model's."""

    override_args: dict[str, Any] | None = None


@dataclass
class ToolDenied:
    """Deny a deferred call; `message` is what the model is told."""

    message: str = 'The tool call was denied.'


@dataclass
class DeferredToolResults:
    """Results for the calls a `DeferredToolRequests` listed, keyed by tool call id.

    A value in `calls` is the tool's result: a plain value, a `ToolReturn` (value, metadata and
    content for the model), `ToolFailed` (failed for good) or `ModelRetry` (the model is asked
    again). `metadata` reaches the resumed tool as `ctx.tool_call_metadata`.
    """

    calls: dict[str, Any] = field(default_factory=dict)
    approvals: dict[str, bool | ToolApproved | ToolDenied] = field(default_factory=dict)
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)

    def update(self, other: DeferredToolResults) -> None:
        """Add `other`'s entries to these (its entries win for an id both name)."""
        self.calls.update(other.calls)
        self.approvals.update(other.approvals)
        self.metadata.update(other.metadata)
