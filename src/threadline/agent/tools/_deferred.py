"""The calls of one tool step that wait outside the run (approval, an outside result), and the
results an application hands back for them.

Rules (pydantic-ai 2.62's):
- a call waits when its tool's definition for this step says so (`kind='unapproved'` without an
  approval, `kind='external'` without a result, whether declared or set by `prepare`), or when
  the tool, its args validator or a tool hook raises `ApprovalRequired` / `CallDeferred`; the
  metadata the exception carries is the call's entry in `DeferredToolRequests.metadata`;
- an approved call that asks for approval again waits again;
- a result is a plain value, a `ToolReturn` (value, metadata, content for the model),
  `ToolFailed` (failed for good, no retry counted) or `ModelRetry` (the model is asked again);
- calls resolved by `handle_deferred_tool_calls` hooks run after the step's other calls, the
  approvals before the outside results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from threadline.agent.output._deferred_types import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from threadline.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed
from threadline.messages import RetryInfo, ToolCallPart, ToolReturn, ToolReturnPart

__all__ = ['Decision', 'Waiting', 'decision_for', 'external_result']

WaitKind = Literal['external', 'unapproved']


@dataclass
class Waiting:
    """The calls of a step that wait, in the order they came to wait, with their metadata."""

    calls: list[ToolCallPart] = field(default_factory=list)
    approvals: list[ToolCallPart] = field(default_factory=list)
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.calls or self.approvals)

    def add(self, call: ToolCallPart, kind: WaitKind, metadata: dict[str, Any] | None = None) -> None:
        (self.calls if kind == 'external' else self.approvals).append(call)
        if metadata:
            self.metadata[call.tool_call_id] = dict(metadata)

    def raised(self, call: ToolCallPart, exc: ApprovalRequired | CallDeferred) -> None:
        self.add(call, 'unapproved' if isinstance(exc, ApprovalRequired) else 'external', exc.metadata)

    def requests(self) -> DeferredToolRequests:
        return DeferredToolRequests(
            calls=list(self.calls), approvals=list(self.approvals), metadata=dict(self.metadata)
        )

    def resolved_in_order(self, results: DeferredToolResults) -> list[ToolCallPart]:
        """The waiting calls `results` answers, approvals first (the reference's order)."""
        return [
            *(c for c in self.approvals if c.tool_call_id in results.approvals),
            *(c for c in self.calls if c.tool_call_id in results.calls),
        ]

    def without(self, calls: list[ToolCallPart]) -> Waiting:
        ids = {c.tool_call_id for c in calls}
        return Waiting(
            calls=[c for c in self.calls if c.tool_call_id not in ids],
            approvals=[c for c in self.approvals if c.tool_call_id not in ids],
            metadata={k: v for k, v in self.metadata.items() if k not in ids},
        )


@dataclass
class Decision:
    """What the application said about one call: run it (approved, maybe with other arguments),
    deny it, or take this outside result."""

    approved: bool = False
    override_args: dict[str, Any] | None = None
    denied: str | None = None
    result: Any = None
    has_result: bool = False
    metadata: dict[str, Any] | None = None


def decision_for(results: DeferredToolResults | None, call: ToolCallPart) -> Decision:
    """The application's decision on `call` in `results` (an empty `Decision`: none)."""
    if results is None:
        return Decision()
    call_id = call.tool_call_id
    metadata = results.metadata.get(call_id)
    if call_id in results.calls:
        return Decision(result=results.calls[call_id], has_result=True, metadata=metadata)
    if call_id not in results.approvals:
        return Decision(metadata=metadata)
    answer = results.approvals[call_id]
    if answer is False or isinstance(answer, ToolDenied):
        message = answer.message if isinstance(answer, ToolDenied) else ToolDenied().message
        return Decision(denied=message, metadata=metadata)
    override = answer.override_args if isinstance(answer, ToolApproved) else None
    return Decision(approved=True, override_args=override, metadata=metadata)


def external_result(call: ToolCallPart, value: Any) -> ToolReturnPart | ToolReturn[Any]:
    """An outside result as the call's answer; a `ToolReturn` is left for the step to unpack."""
    if isinstance(value, (ToolReturnPart, ToolReturn)):
        return value
    if isinstance(value, ToolFailed):
        return ToolReturnPart(call.tool_name, value.message, call.tool_call_id, outcome='failed')
    if isinstance(value, ModelRetry):
        return ToolReturnPart(
            call.tool_name, value.message, call.tool_call_id, outcome='retried', retry=RetryInfo('model_retry')
        )
    return ToolReturnPart(call.tool_name, value, call.tool_call_id)
