"""Between FileStore lines and the storage contract's records: each record kind both ways."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from threadline.messages import ModelMessage
from threadline.messages.wire import encode_each
from threadline.storage._neutral import now_text, parse_time, to_python_output
from threadline.storage._records import (
    AuditEvent,
    OutcomeReceipt,
    RunFinish,
    RunLineage,
    Snapshot,
    SnapshotMark,
    StepEvent,
    ToolEffect,
    WaitRecord,
)
from threadline.storage.file._records import (
    AuditEventLine,
    EffectLine,
    EventLine,
    FinishLine,
    LineageLine,
    OutcomeLine,
    SnapshotLine,
    WaitLine,
)

__all__ = [
    'audit_event_line',
    'effect_line',
    'event_line',
    'finish_line',
    'lineage_line',
    'result_line',
    'snapshot_line',
    'to_audit_event',
    'to_effect',
    'to_event',
    'to_outcome',
    'to_snapshot',
    'to_wait',
]


def finish_line(finish: RunFinish, *, with_usage: bool) -> FinishLine:
    usage = finish.usage if with_usage else None
    return FinishLine(run_id=finish.run_id, status=finish.status, output=finish.output_json, usage=usage, at=now_text())


def lineage_line(run_id: str, lineage: RunLineage) -> LineageLine:
    return LineageLine(
        run_id=run_id,
        parent_run_id=lineage.parent_run_id,
        agent_name=lineage.agent_name,
        metadata=dict(lineage.metadata),
        registration_id=lineage.registration_id,
    )


def result_line(result: Any, *, add_usage: bool) -> FinishLine:
    """The run record `save` writes for a finished run result."""
    try:
        output = json.dumps(to_python_output(result.output))
    except (TypeError, ValueError):
        output = json.dumps(repr(result.output))
    return FinishLine(
        run_id=result.run_id,
        status='completed',
        output=output,
        usage=result.run_usage,
        add_usage=add_usage,
        model_name=getattr(result, 'model_name', None),
        at=now_text(),
        register=True,
    )


def snapshot_line(run_id: str, branch_id: int, position: int, mark: SnapshotMark) -> SnapshotLine:
    return SnapshotLine(
        run_id=run_id,
        branch_id=branch_id,
        position=position,
        state=mark.state,
        step_index=mark.step_index,
        idempotency_key=mark.idempotency_key,
        timestamp=now_text(),
        pending=[body.decode() for body in encode_each(mark.pending)],
    )


def to_snapshot(conversation_id: str, line: SnapshotLine, pending: tuple[ModelMessage, ...] = ()) -> Snapshot:
    """The record of a snapshot line (`pending`: its pending bodies, decoded by the caller)."""
    stamp = parse_time(line.timestamp)
    return Snapshot(
        line.run_id, conversation_id, line.position, line.branch_id, line.state, line.step_index, stamp, pending
    )


def event_line(event: StepEvent) -> EventLine:
    return EventLine(**_fields(event))


def effect_line(effect: ToolEffect) -> EffectLine:
    return EffectLine(**_fields(effect))


def to_event(line: EventLine) -> StepEvent:
    return StepEvent(**_fields(line))


def to_effect(line: EffectLine) -> ToolEffect:
    return ToolEffect(**_fields(line))


def to_outcome(line: OutcomeLine) -> OutcomeReceipt:
    return OutcomeReceipt(**_fields(line))


def to_wait(line: WaitLine, resolved_at: str | None) -> WaitRecord:
    return WaitRecord(**_fields(line), resolved_at=parse_time(resolved_at) if resolved_at else None)


def audit_event_line(event: AuditEvent) -> AuditEventLine:
    return AuditEventLine(**_fields(event))


def to_audit_event(line: AuditEventLine) -> AuditEvent:
    return AuditEvent(**_fields(line))


def _fields(value: Any) -> dict[str, Any]:
    """The fields of a record (dataclass or struct) by name, without the line tag."""
    if isinstance(value, msgspec.Struct):
        return msgspec.structs.asdict(value)
    return {name: getattr(value, name) for name in value.__dataclass_fields__}
