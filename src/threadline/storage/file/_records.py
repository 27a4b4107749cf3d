"""The FileStore's record schema: one msgspec tagged union for every line a conversation file
holds, decoded by one typed decoder.

Each line is one record, tagged by `t`. The field names are the file format: files written by
earlier versions decode unchanged. A tag this version does not know is a damaged (or newer) file
and is reported as such, never skipped. What the records replay into is `_file_state`; how they
map to the contract's records is `_file_convert`.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, Literal

import msgspec

from threadline.messages import RunUsage
from threadline.storage._records import EventKind, Provenance, ReceiptStrength

__all__ = [
    'AuditEventLine',
    'BatchLine',
    'BranchLine',
    'CreateLine',
    'EffectLine',
    'EventLine',
    'FileRecord',
    'FinishLine',
    'HeadLine',
    'LineageLine',
    'MaterializeLine',
    'OutcomeLine',
    'QuarantineLine',
    'REV',
    'RevLine',
    'RunLine',
    'SealLine',
    'SnapshotLine',
    'WaitLine',
    'WaitResolvedLine',
    'decode_line',
    'file_key',
]


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


class LineageLine(_Line, tag='lineage'):
    """Where a run came from (`RunLineage`); a later line for the same run replaces it."""

    run_id: str
    parent_run_id: str | None = None
    agent_name: str | None = None
    metadata: dict[str, str] = {}
    registration_id: str | None = None


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
    pending: list[str] = []
    """The bodies of the messages the snapshot holds past its position (`SnapshotMark.pending`)."""


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
    | LineageLine
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


def file_key(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:32]
