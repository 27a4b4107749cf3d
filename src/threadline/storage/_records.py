"""The values stores hand back: stored conversations, summaries, search hits, step records."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from threadline.exceptions import UserError
from threadline.messages import ModelMessage, RunUsage

__all__ = [
    'EVERY_SCOPE',
    'EveryScope',
    'RECEIPT_STRENGTHS',
    'check_strength',
    'AuditEvent',
    'BatchInfo',
    'ChainCheck',
    'ConversationSummary',
    'EventKind',
    'OutcomeReceipt',
    'Provenance',
    'ReceiptStrength',
    'RecoveryInspection',
    'RunFinish',
    'RunLineage',
    'RunRecord',
    'RunStart',
    'SearchHit',
    'Snapshot',
    'SnapshotMark',
    'SnapshotRequest',
    'StepEvent',
    'StepWrite',
    'StoredConversation',
    'ToolEffect',
    'WaitRecord',
]

Provenance = Literal['server', 'client']


class EveryScope(enum.Enum):
    """The explicit "all tenants" of an operator action (`prune(scope=EVERY_SCOPE)`): never implied
    by a missing or empty scope."""

    EVERY_SCOPE = 'every scope'


EVERY_SCOPE = EveryScope.EVERY_SCOPE
EventKind = Literal[
    'run_started',
    'run_completed',
    'run_failed',
    'model_request_started',
    'model_request_completed',
    'model_request_failed',
    'tool_call_started',
    'tool_call_completed',
    'tool_call_failed',
]


@dataclass(frozen=True)
class BatchInfo:
    """One appended batch: positions `[start, end)` of the history, who wrote it, and its chain link."""

    start: int
    end: int
    provenance: Provenance
    run_id: str | None
    link: str
    created_at: datetime
    complete: bool = True
    """False when a fork point cuts the batch: `link` then covers messages beyond this history."""


@dataclass
class StoredConversation:
    """A conversation as loaded: ready to pass on as `message_history=`, `usage=` and
    `conversation_id=` (see `run_kwargs`).

    `offset` is the position of `messages[0]` in the whole history (non-zero with `last=`);
    `shared_prefix` is how many leading messages are shared with the conversation it was forked
    from (`forked_from`); `batches` records the provenance of each batch holding a returned message (with `last=`, only
    those reaching into the window); `chain_head` is the hash-chain
    link of the whole stored history.
    """

    conversation_id: str
    scope: str
    messages: list[ModelMessage]
    usage: RunUsage
    revision: int
    offset: int = 0
    length: int = 0
    batches: list[BatchInfo] = field(default_factory=list)
    forked_from: str | None = None
    shared_prefix: int = 0
    chain_head: str | None = None
    title: str | None = None
    quarantined: dict[str, Any] | None = None
    raw: bytes | None = field(default=None, repr=False, compare=False)
    """The stored JSON of `messages` exactly as stored (set when the whole history was loaded)."""

    def run_kwargs(self) -> dict[str, Any]:
        """`message_history`, `usage` and `conversation_id` for `agent.run(...)`, so a run continued from
        this conversation (a fork too) carries its id and counts toward its usage."""
        return {'message_history': self.messages, 'usage': self.usage, 'conversation_id': self.conversation_id}


@dataclass(frozen=True)
class ConversationSummary:
    """A row of `list()`: what a person needs to pick a conversation."""

    conversation_id: str
    scope: str
    title: str | None
    message_count: int
    run_count: int
    created_at: datetime
    updated_at: datetime
    revision: int
    forked_from: str | None = None


@dataclass(frozen=True)
class SearchHit:
    """A full-text match: where it is, how well it ranks (higher is better), and a short snippet."""

    conversation_id: str
    position: int
    score: float
    snippet: str
    run_id: str | None = None
    role: str | None = None
    """'user', 'assistant', 'tool' (a request answering tool calls) or 'system'."""
    timestamp: datetime | None = None
    matches: tuple[tuple[int, int], ...] = ()
    """Where the marked matches are in `snippet` (`snippet[start:end]`, without the brackets that
    mark them), so a program can tell a mark from a bracket the text itself holds."""


@dataclass(frozen=True)
class ChainCheck:
    """The result of checking a stored conversation: its history re-hashed against the chain
    (`first_bad_position` is the first message that fails), and the keyed seal over everything the
    audit relies on (`record` names the first record or seal that fails).

    `key_id` is the key that seals this conversation now (None: not sealed), `seals` how many seals
    verified, and `tip` what the tip book outside the store says: 'current', 'behind' (the store
    is ahead of it, which is fine), 'none', or a failure: 'replaced' (its first seal is not the
    book's), 'truncated' or 'diverged'. `code` says what failed, for programs (see
    `trust.sealing.Problem`).
    """

    ok: bool
    checked: int
    chain_head: str | None
    first_bad_position: int | None = None
    reason: str | None = None
    record: str | None = None
    key_id: str | None = None
    seals: int = 0
    tip: str = 'none'
    code: str | None = None


@dataclass(frozen=True)
class RunRecord:
    """A run as stored: ids, output (JSON), its own usage, model and timestamps, and where it came
    from (see `RunLineage`: empty unless the run was registered with one)."""

    run_id: str
    conversation_id: str
    started_at: datetime
    finished_at: datetime | None = None
    model_name: str | None = None
    output_json: str | None = None
    usage: RunUsage | None = None
    status: str = 'running'
    parent_run_id: str | None = None
    agent_name: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    registration_id: str | None = None


@dataclass(frozen=True)
class RunLineage:
    """Where a run came from, recorded with its run record (`StepWrite.lineage`), under the names
    pydantic-ai-harness uses: the run that started it (`parent_run_id`: a delegate's
    orchestrator), the agent's name, free-form string metadata, and the registration that claimed
    the run id (so a retried registration is told from a second run reusing the id)."""

    parent_run_id: str | None = None
    agent_name: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    registration_id: str | None = None


@dataclass(frozen=True)
class StepEvent:
    """One entry of a run's append-only event log."""

    run_id: str
    kind: EventKind
    step_index: int
    timestamp: datetime
    tool_call_id: str | None = None
    tool_name: str | None = None
    error: str | None = None
    idempotency_key: str | None = None


@dataclass(frozen=True)
class Snapshot:
    """A settled boundary: a position in the conversation log and whether the history there is
    `complete` (every call answered) or `interrupted`. The history at the snapshot is the log's
    first `position` messages of `branch_id`'s lineage, then `pending`: messages the run had
    built but not sent yet when the snapshot was taken (see `SnapshotMark.pending`)."""

    run_id: str
    conversation_id: str
    position: int
    branch_id: int
    state: Literal['complete', 'interrupted']
    step_index: int
    timestamp: datetime
    pending: tuple[ModelMessage, ...] = ()


@dataclass(frozen=True)
class ToolEffect:
    """The ledger row of one tool call: `started` before the body runs, then `completed` or
    `failed`. A row still `started` after a crash means the effect is unknown."""

    run_id: str
    tool_call_id: str
    tool_name: str
    status: Literal['started', 'completed', 'failed']
    started_at: datetime
    ended_at: datetime | None = None
    idempotency_key: str | None = None
    summary: str | None = None


@dataclass(frozen=True)
class RecoveryInspection:
    """What is known about a run after the fact (read-only; not permission to replay).

    `unknown` lists tool calls that started and never finished: their effect may or may not have
    happened, so query the destination with the idempotency key before anything else.
    """

    run_id: str
    conversation_id: str | None
    latest: Snapshot | None
    latest_settled: Snapshot | None
    unknown: list[ToolEffect]
    completed: list[ToolEffect]
    failed: list[ToolEffect]
    events: list[StepEvent]


ReceiptStrength = Literal['outcome', 'transport', 'activity']
RECEIPT_STRENGTHS: tuple[str, ...] = get_args(ReceiptStrength)


def check_strength(strength: str) -> None:
    """Refuse a receipt strength other than the three an audit knows how to weigh."""
    if strength not in RECEIPT_STRENGTHS:
        raise UserError(f'strength must be one of {RECEIPT_STRENGTHS}, not {strength!r}')


@dataclass(frozen=True)
class OutcomeReceipt:
    """Evidence that a run's expected effect happened, from the strongest read available.

    `strength`: `'outcome'` (the destination was re-read and shows the intended revision),
    `'transport'` (a tool reported the request accepted), `'activity'` (the model said it was done).
    Content-minimized: identifiers and references, never the effect's payload.
    """

    conversation_id: str
    run_id: str | None
    expected_effect: str
    destination: str | None
    idempotency_key: str | None
    observed_revision: str | None
    evidence_ref: str | None
    strength: ReceiptStrength
    observed_at: datetime


@dataclass(frozen=True)
class WaitRecord:
    """A run legitimately held open: who owes what decision, by when, and how to resume."""

    conversation_id: str
    run_id: str | None
    owner: str
    decision: str
    deadline: datetime
    resume_token: str
    created_at: datetime
    resolved_at: datetime | None = None


@dataclass(frozen=True)
class AuditEvent:
    """A content-free record of something repair or sanitizing changed in a stored history."""

    conversation_id: str
    kind: str
    tool_call_hash: str | None
    position: int | None
    observed_at: datetime


RunStatus = Literal['running', 'completed', 'failed']


@dataclass(frozen=True)
class RunFinish:
    """How a run ended: `status`, its output as JSON, and its own usage (added to the
    conversation's total when the run completed)."""

    run_id: str
    status: RunStatus
    output_json: str | None = None
    usage: RunUsage | None = None


@dataclass(frozen=True)
class RunStart:
    """What a run over a stored conversation checks before its first model request, read at once
    (`run_start`): where the stored history stands (`revision`, `length`), its last message (the
    run's history must hold it at `length - 1`, or another writer got there first), whether the
    audit quarantined it, and the ledger rows still `started` (calls whose effect is unknown)."""

    revision: int
    length: int
    tip: ModelMessage | None
    unresolved: list[ToolEffect]
    quarantined: dict[str, Any] | None = None


@dataclass(frozen=True)
class SnapshotMark:
    """Mark the conversation's tip as a settled boundary of a run (see `Snapshot`).

    `pending` are messages past the tip that belong to the snapshot but not yet to the log: a
    request pydantic-ai has built (tool results folded in) and will stamp when it sends it. The
    log takes it as sent, with its stamp, once; the snapshot keeps it as it stood, so a run
    killed before the request went out resumes with the results and runs no tool twice.
    """

    state: Literal['complete', 'interrupted']
    step_index: int
    idempotency_key: str | None = None
    pending: Sequence[ModelMessage] = ()


@dataclass(frozen=True)
class SnapshotRequest:
    """`save_snapshot`'s input: which run, which conversation, and the boundary to record."""

    run_id: str
    conversation_id: str
    scope: str
    mark: SnapshotMark


@dataclass(frozen=True)
class StepWrite:
    """Everything StepPersistence writes at one boundary, applied in one transaction.

    `messages` are appended; `history`, when given, replaces the stored history as a new branch
    instead (a processor rewrote it). `register` creates the run record; `finish` closes it.
    `effects` are ledger rows, upserted in order (a later status of the same call wins).

    `durable=False` lets the backend commit without waiting for the disk (SQLite
    `synchronous=NORMAL` for that commit, PostgreSQL `synchronous_commit=off`, no fsync for
    files): the write is still atomic and survives the process being killed, and the next durable
    write makes it durable too, but a power loss before then may drop it. StepPersistence uses it
    only for writes whose loss a crash already allows (see its docstring).
    """

    conversation_id: str
    scope: str
    run_id: str
    expected_revision: int | None
    messages: Sequence[ModelMessage] = ()
    history: Sequence[ModelMessage] | None = None
    provenance: Provenance = 'server'
    events: Sequence[StepEvent] = ()
    snapshot: SnapshotMark | None = None
    effects: Sequence[ToolEffect] = ()
    register: bool = False
    finish: RunFinish | None = None
    durable: bool = True
    lineage: RunLineage | None = None
    """Recorded on the run record (replacing any recorded before) when given."""

    @property
    def changes_history(self) -> bool:
        """Whether the write starts a run or changes the stored history (what quarantine refuses)."""
        return self.register or bool(self.messages) or self.history is not None


@dataclass(frozen=True)
class Notebook:
    """A Markdown notebook of one namespace (a user, a tenant) in one scope: `Memory`'s storage.
    `version` counts its writes; every write names the version it replaces."""

    namespace: str
    content: str
    version: int
    updated_at: datetime


@dataclass(frozen=True)
class NotebookWrite:
    """What a notebook write did: the version it produced, and whether it was a replay of an
    operation already applied (the same `operation_id`), which changed nothing."""

    version: int
    replayed: bool = False
