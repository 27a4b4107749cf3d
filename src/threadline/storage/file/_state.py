"""A conversation file's state: what its records replay into (`ConvState`), applied one at a time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from threadline.messages import RunUsage
from threadline.storage._neutral import parse_time
from threadline.storage._records import RunRecord
from threadline.storage.file._records import (
    AuditEventLine,
    BatchLine,
    BranchLine,
    CreateLine,
    EffectLine,
    EventLine,
    FileRecord,
    FinishLine,
    HeadLine,
    LineageLine,
    MaterializeLine,
    OutcomeLine,
    QuarantineLine,
    RevLine,
    RunLine,
    SealLine,
    SnapshotLine,
    WaitLine,
    WaitResolvedLine,
)
from threadline.trust.sealing import GENESIS, GENESIS_TAG

__all__ = ['Branch', 'ConvState', 'RunState', 'replay']

T = TypeVar('T')


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
    lineage: LineageLine | None = None

    def record(self, run_id: str, conversation_id: str) -> RunRecord:
        finished = parse_time(self.finished_at) if self.finished_at else None
        started = parse_time(self.started_at)
        line = self.lineage or _NO_LINEAGE
        return RunRecord(
            run_id,
            conversation_id,
            started,
            finished,
            self.model_name,
            self.output,
            self.usage,
            self.status,
            line.parent_run_id,
            line.agent_name,
            dict(line.metadata),
            line.registration_id,
        )


_NO_LINEAGE = LineageLine(run_id='')


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
            case LineageLine(run_id=run_id):
                self.runs[run_id].lineage = record
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
