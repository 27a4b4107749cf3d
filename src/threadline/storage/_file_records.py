"""The FileStore's record schema: one msgspec tagged union for every line a conversation file
holds, decoded by one typed decoder, and the state those records replay into.

Each line is one record, tagged by `t`. The field names are the file format: files written by
earlier versions decode unchanged. A tag this version does not know is a damaged (or newer) file
and is reported as such, never skipped.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeVar

import msgspec

from ..messages import RunUsage
from ._chain import GENESIS
from ._neutral import now_text, parse_time, to_python_output
from ._records import (
    AuditEvent,
    EventKind,
    OutcomeReceipt,
    Provenance,
    ReceiptStrength,
    RunFinish,
    RunRecord,
    Snapshot,
    SnapshotMark,
    StepEvent,
    ToolEffect,
    WaitRecord,
)
from ._seal import GENESIS_TAG

__all__ = [
    'REV',
    'AuditEventLine',
    'BatchLine',
    'Branch',
    'BranchLine',
    'ConvState',
    'CreateLine',
    'EffectLine',
    'EventLine',
    'FileRecord',
    'FinishLine',
    'HeadLine',
    'MaterializeLine',
    'OutcomeLine',
    'QuarantineLine',
    'RevLine',
    'SealLine',
    'RunLine',
    'SnapshotLine',
    'WaitLine',
    'WaitResolvedLine',
    'audit_event_line',
    'decode_line',
    'effect_line',
    'event_line',
    'file_key',
    'finish_line',
    'replay',
    'result_line',
    'snapshot_line',
    'to_audit_event',
    'to_effect',
    'to_event',
    'to_outcome',
    'to_snapshot',
    'to_wait',
]

T = TypeVar('T')


class _Line(msgspec.Struct, tag_field='t', kw_only=True):
    """A record of a conversation file."""


class CreateLine(_Line, tag='create'):
    id: str
    scope: str
    at: str
    head: int = 1
    title: str | None = None
    forked_from: str | None = None
    forked_at: int | None = None
    parent_branch: tuple[str, int] | None = None
    link: str | None = None
    usage: RunUsage | None = None


class BatchLine(_Line, tag='batch'):
    branch: int
    start: int
    bodies: list[str]
    provenance: Provenance
    run_id: str | None
    prev_link: str
    link: str
    at: str
    title: str | None = None

    @property
    def end(self) -> int:
        return self.start + len(self.bodies)


class BranchLine(_Line, tag='branch'):
    id: int
    parent: int
    fork_position: int


class HeadLine(_Line, tag='head'):
    link: str


class RevLine(_Line, tag='rev'):
    """The conversation's revision moved on by one (written last, so a torn write never counts)."""


class MaterializeLine(_Line, tag='materialize'):
    branch: int
    bodies: list[str]


class RunLine(_Line, tag='run'):
    run_id: str
    started_at: str
    status: str = 'running'
    model_name: str | None = None


class FinishLine(_Line, tag='finish'):
    run_id: str
    status: str
    at: str
    output: str | None = None
    usage: RunUsage | None = None
    add_usage: bool = True
    model_name: str | None = None
    register: bool = False


class EventLine(_Line, tag='event'):
    run_id: str
    kind: EventKind
    step_index: int
    timestamp: datetime
    tool_call_id: str | None = None
    tool_name: str | None = None
    error: str | None = None
    idempotency_key: str | None = None


class SnapshotLine(_Line, tag='snapshot'):
    run_id: str
    branch_id: int
    position: int
    state: Literal['complete', 'interrupted']
    step_index: int
    timestamp: str
    idempotency_key: str | None = None


class EffectLine(_Line, tag='effect'):
    run_id: str
    tool_call_id: str
    tool_name: str
    status: Literal['started', 'completed', 'failed']
    started_at: datetime
    ended_at: datetime | None = None
    idempotency_key: str | None = None
    summary: str | None = None


class OutcomeLine(_Line, tag='outcome'):
    conversation_id: str
    run_id: str | None
    expected_effect: str
    destination: str | None
    idempotency_key: str | None
    observed_revision: str | None
    evidence_ref: str | None
    strength: ReceiptStrength
    observed_at: datetime


class WaitLine(_Line, tag='wait'):
    conversation_id: str
    run_id: str | None
    owner: str
    decision: str
    deadline: datetime
    resume_token: str
    created_at: datetime


class WaitResolvedLine(_Line, tag='wait_resolved'):
    resume_token: str
    at: str


class AuditEventLine(_Line, tag='audit_event'):
    conversation_id: str
    kind: str
    tool_call_hash: str | None
    position: int | None
    observed_at: datetime


class QuarantineLine(_Line, tag='quarantine'):
    report: dict[str, Any] | None


class SealLine(_Line, tag='seal'):
    """The keyed seal over the bytes of every line since the previous seal (see `_seal`)."""

    seq: int
    key: str
    tag: str
    adopted: str | None = None
    """When a file written before seals existed was sealed as it stood (the re-chain migration)."""


FileRecord = (
    CreateLine
    | BatchLine
    | BranchLine
    | HeadLine
    | RevLine
    | MaterializeLine
    | RunLine
    | FinishLine
    | EventLine
    | SnapshotLine
    | EffectLine
    | OutcomeLine
    | WaitLine
    | WaitResolvedLine
    | AuditEventLine
    | QuarantineLine
    | SealLine
)
_decoder = msgspec.json.Decoder(FileRecord)
REV = RevLine()


def decode_line(line: bytes) -> FileRecord:
    """One record; raises `msgspec.DecodeError` (a ValidationError too) for a damaged line."""
    return _decoder.decode(line)


@dataclass
class Branch:
    id: int
    parent: int | None
    fork_position: int
    owner: str
    messages: dict[int, str] = field(default_factory=dict)
    length: int = 0


@dataclass
class RunState:
    status: str
    started_at: str
    finished_at: str | None = None
    output: str | None = None
    model_name: str | None = None
    usage: RunUsage | None = None

    def record(self, run_id: str, conversation_id: str) -> RunRecord:
        finished = parse_time(self.finished_at) if self.finished_at else None
        started = parse_time(self.started_at)
        return RunRecord(
            run_id, conversation_id, started, finished, self.model_name, self.output, self.usage, self.status
        )


@dataclass
class ConvState:
    """A conversation as its file says it is now."""

    id: str
    scope: str
    created_at: str
    updated_at: str
    head: int
    revision: int = 0
    title: str | None = None
    usage: RunUsage = field(default_factory=RunUsage)
    forked_from: str | None = None
    forked_at: int | None = None
    parent_branch: tuple[str, int] | None = None
    chain_head: str = GENESIS
    branches: dict[int, Branch] = field(default_factory=dict)
    batches: list[BatchLine] = field(default_factory=list)
    runs: dict[str, RunState] = field(default_factory=dict)
    events: list[EventLine] = field(default_factory=list)
    snapshots: list[SnapshotLine] = field(default_factory=list)
    effects: dict[tuple[str, str], EffectLine] = field(default_factory=dict)
    outcomes: list[OutcomeLine] = field(default_factory=list)
    waits: list[WaitLine] = field(default_factory=list)
    resolved: dict[str, str] = field(default_factory=dict)
    audit_events: list[AuditEventLine] = field(default_factory=list)
    quarantine: dict[str, Any] | None = None
    seals: int = 0
    seal_tag: str = GENESIS_TAG
    seal_genesis: str | None = None

    def seen(self, records: list[EventLine] | list[SnapshotLine], run_id: str, key: str | None) -> bool:
        """Whether a record with this run and idempotency key is stored already (a retried write)."""
        return key is not None and any(r.run_id == run_id and r.idempotency_key == key for r in records)

    def apply(self, record: FileRecord) -> None:
        """Move the state on by one record."""
        match record:
            case BatchLine():
                self._batch(record)
            case BranchLine(id=branch_id, parent=parent, fork_position=at):
                self.branches[branch_id] = Branch(branch_id, parent, at, self.id, length=at)
                self.head = branch_id
            case HeadLine(link=link):
                self.chain_head = link
            case RevLine():
                self.revision += 1
            case MaterializeLine(branch=branch_id, bodies=bodies):
                branch = self.branches[branch_id]
                branch.messages.update(enumerate(bodies))
                branch.fork_position = 0
                self.parent_branch = None
            case RunLine(run_id=run_id, started_at=started):
                self.runs.setdefault(run_id, RunState('running', started, model_name=record.model_name))
            case FinishLine():
                self._finish(record)
            case EventLine():
                self.events.append(record)
            case SnapshotLine():
                self.snapshots.append(record)
            case EffectLine():
                self._effect(record)
            case OutcomeLine():
                self.outcomes.append(record)
            case WaitLine():
                self.waits.append(record)
            case WaitResolvedLine(resume_token=token, at=at):
                self.resolved[token] = at
                self.updated_at = at
            case AuditEventLine():
                self.audit_events.append(record)
            case QuarantineLine(report=report):
                self.quarantine = report
            case SealLine(tag=tag):
                self.seals, self.seal_tag = self.seals + 1, tag
                self.seal_genesis = self.seal_genesis or tag
            case CreateLine():
                raise msgspec.ValidationError('a second create record')

    def _batch(self, record: BatchLine) -> None:
        branch = self.branches[record.branch]
        for offset, body in enumerate(record.bodies):
            branch.messages[record.start + offset] = body
        branch.length = record.end
        self.head, self.chain_head = record.branch, record.link
        self.title = self.title or record.title
        self.updated_at = record.at
        self.batches.append(record)

    def _finish(self, record: FinishLine) -> None:
        run = self.runs.setdefault(record.run_id, RunState('running', record.at))
        first_completion = run.status != 'completed' and record.status == 'completed'
        run.status, run.finished_at, run.output = record.status, record.at, record.output
        run.model_name = record.model_name or run.model_name
        if record.usage is not None:
            run.usage = record.usage
            if first_completion and record.add_usage:
                self.usage.incr(record.usage)
        self.updated_at = record.at

    def _effect(self, record: EffectLine) -> None:
        """A later status wins; a key or summary already recorded stays unless a new one is given."""
        key = (record.run_id, record.tool_call_id)
        previous = self.effects.get(key)
        if previous is not None:
            record = msgspec.structs.replace(
                record,
                idempotency_key=_newer(record.idempotency_key, previous.idempotency_key),
                summary=_newer(record.summary, previous.summary),
                ended_at=_newer(record.ended_at, previous.ended_at),
            )
        self.effects[key] = record


def _newer(value: T | None, previous: T | None) -> T | None:
    return previous if value is None else value


def replay(records: list[FileRecord]) -> ConvState:
    """The conversation's state after applying its records in order (the first creates it)."""
    create = records[0]
    if not isinstance(create, CreateLine):
        raise msgspec.ValidationError('the first record is not a create record')
    state = ConvState(create.id, create.scope, create.at, create.at, head=1, title=create.title)
    start = create.forked_at or 0
    state.branches[1] = Branch(1, None, start, state.id, length=start)
    if create.forked_from and create.parent_branch and create.link:
        state.forked_from, state.forked_at = create.forked_from, create.forked_at
        state.parent_branch = create.parent_branch
        state.chain_head = create.link
        state.usage = create.usage or RunUsage()
        state.revision = 1
    for record in records[1:]:
        state.apply(record)
    return state


def file_key(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:32]


def finish_line(finish: RunFinish, *, with_usage: bool) -> FinishLine:
    usage = finish.usage if with_usage else None
    return FinishLine(run_id=finish.run_id, status=finish.status, output=finish.output_json, usage=usage, at=now_text())


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
    )


def to_snapshot(conversation_id: str, line: SnapshotLine) -> Snapshot:
    stamp = parse_time(line.timestamp)
    return Snapshot(line.run_id, conversation_id, line.position, line.branch_id, line.state, line.step_index, stamp)


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
