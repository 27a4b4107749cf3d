"""The storage contract, written once: every operation a store offers, typed records in and out.

A backend implements these Protocols synchronously (SQL, JSON lines, or your own database);
`AsyncStore` derives the async face from the same definitions, so there is one signature per
operation. `threadline.storage.testing` checks a backend against the rules below.

Rules every implementation keeps:
- a non-empty `scope` is required on every call that touches tenant data (`None`, `''` and
  non-strings raise `UserError`), and another scope's conversation is reported exactly as a missing
  one (`ConversationNotFound`); reads by run id see only the scope's runs (None or empty), and a
  write naming another conversation's run raises `RunNotFound`;
- a run belongs to one conversation, and so to one scope, for good;
- ids are global and must be unguessable (the server makes them: UUIDv7). A write to an id another
  scope holds is refused as not found; that refusal shows the id is taken, so never let a client
  pick conversation or run ids;
- a stale `expected_revision` raises `ConflictError` and writes nothing;
- each write is one transaction: all of it is stored, or none of it;
- concurrent writers to one conversation serialize; they never interleave.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from threadline.messages import ModelMessage, RunUsage
from threadline.storage._records import (
    AuditEvent,
    ChainCheck,
    ConversationSummary,
    EveryScope,
    Notebook,
    NotebookWrite,
    OutcomeReceipt,
    Provenance,
    ReceiptStrength,
    RunFinish,
    RunRecord,
    RunStart,
    SearchHit,
    Snapshot,
    SnapshotRequest,
    StepEvent,
    StepWrite,
    StoredConversation,
    ToolEffect,
    WaitRecord,
)

__all__ = ['TURN_PATIENCE', 'AuditStore', 'ConversationStore', 'FinishedRun', 'NotebookStore', 'StepStore', 'SyncStore']

TURN_PATIENCE = 5.0
"""Seconds a claimant waiting for a turn lease keeps its place in line without claiming again."""


class FinishedRun(Protocol):
    """What `save` reads from a run result (`AgentRunResult`, `StreamedRunResult`, or your own)."""

    @property
    def run_id(self) -> str | None: ...

    @property
    def conversation_id(self) -> str | None: ...

    @property
    def output(self) -> object: ...

    @property
    def run_usage(self) -> RunUsage: ...

    def new_messages(self) -> list[ModelMessage]: ...


@runtime_checkable
class ConversationStore(Protocol):
    """An append-only conversation log with revisions, forks, scopes, retention and search."""

    def save(
        self,
        result: FinishedRun,
        *,
        scope: str,
        conversation_id: str | None = None,
        expected_revision: int | None = None,
        branch_at: int | None = None,
    ) -> int:
        """Append a run's new messages (those not stored yet) and its run record; returns the revision.

        `branch_at=n` stores the run after the first `n` stored messages instead, on a new branch
        (as `replace` does: the old tip stays reachable through `branches` and `load_at`), in the
        same write as its run record: what a chat client's "regenerate" or "edit" of an earlier
        turn means. It needs `expected_revision`, a conversation that exists, `n` within its
        history, and a run stored nowhere yet; `n` equal to the stored length is an append."""
        ...

    def append(
        self,
        conversation_id: str,
        messages: Sequence[ModelMessage],
        *,
        scope: str,
        expected_revision: int | None = None,
        provenance: Provenance = 'server',
    ) -> int:
        """Append a batch after the stored tip (creating the conversation); returns the new revision."""
        ...

    def replace(
        self,
        conversation_id: str,
        messages: Sequence[ModelMessage],
        *,
        scope: str,
        expected_revision: int,
        provenance: Provenance = 'server',
    ) -> int:
        """Store a rewritten history as a new branch (the old tip stays reachable); returns the revision."""
        ...

    def load(self, conversation_id: str, *, scope: str, last: int | None = None) -> StoredConversation:
        """The stored history (its `last` messages, cut where no tool pair is split), usage and revision."""
        ...

    def list(
        self, scope: str, *, limit: int = 50, offset: int = 0, query: str | None = None
    ) -> builtins.list[ConversationSummary]:
        """The scope's conversations, most recently updated first; `query` filters by title."""
        ...

    def scope_counts(self, scope: EveryScope) -> dict[str, int]:
        """Every scope that holds conversations, and how many. An operator action across tenants
        (for tools that help a person find their data): it takes only `EVERY_SCOPE`, so no tenant's
        code path reaches it by passing its own scope."""
        ...

    def fork(self, conversation_id: str, *, scope: str, at: int | None = None, new_id: str | None = None) -> str:
        """A new conversation sharing the first `at` messages (all by default); returns its id."""
        ...

    def delete(self, conversation_id: str, *, scope: str) -> None:
        """Erase the conversation and everything derived from it (forks keep their own copy)."""
        ...

    def prune(
        self, *, older_than: datetime | None = None, keep_last: int | None = None, scope: str | EveryScope
    ) -> builtins.list[str]:
        """Delete the scope's conversations not updated since `older_than`, or beyond its `keep_last`
        newest; `scope=EVERY_SCOPE` applies the rule to every scope (an operator action). With
        `older_than`, the scope's notebooks not written since then are erased too. Returns the
        deleted conversation ids."""
        ...

    def search(
        self,
        query: str,
        *,
        scope: str,
        conversation_id: str | None = None,
        limit: int = 10,
        include_dropped: bool = False,
    ) -> builtins.list[SearchHit]:
        """Ranked full-text matches within the scope, or one conversation's history (with
        `include_dropped`: every branch of it, so turns a rewrite or compaction dropped too).
        `query` follows `threadline.storage.index._query` (words, "phrases", prefix*)."""
        ...

    def verify(self, conversation_id: str, *, scope: str) -> ChainCheck:
        """Re-hash the stored history against its chain."""
        ...

    def raw_history(self, conversation_id: str, *, scope: str) -> bytes:
        """The stored wire JSON of the whole history, byte for byte as stored."""
        ...

    def lineage(self, conversation_id: str, *, scope: str) -> builtins.list[tuple[str, int, int]]:
        """(conversation id, start, end) of each segment the history is made of, oldest first."""
        ...

    def branches(self, conversation_id: str, *, scope: str) -> builtins.list[tuple[int, int]]:
        """(branch id, length) of each branch of the conversation, oldest first."""
        ...

    def conversation_state(self, conversation_id: str, *, scope: str) -> tuple[int, int] | None:
        """(revision, length), or None when the conversation does not exist in this scope."""
        ...

    def load_at(
        self, conversation_id: str, *, scope: str, branch_id: int, position: int
    ) -> builtins.list[ModelMessage]:
        """The history of `branch_id`'s lineage up to `position` (what a snapshot points at)."""
        ...

    def close(self) -> None:
        """Release connections and files."""
        ...


@runtime_checkable
class StepStore(Protocol):
    """Run records, the event log, snapshots (positions in the log) and the tool-effect ledger."""

    def step_write(self, write: StepWrite) -> int:
        """One StepPersistence boundary in one transaction; returns the revision after it."""
        ...

    def register_run(self, run_id: str, *, conversation_id: str, scope: str, model_name: str | None = None) -> None:
        """Record a run of the conversation (a run belongs to one conversation for good)."""
        ...

    def finish_run(self, finish: RunFinish, *, scope: str) -> None:
        """Close a run record with its status, output (JSON) and usage."""
        ...

    def get_run(self, run_id: str, *, scope: str) -> RunRecord | None:
        """The run, or None when it does not exist in this scope."""
        ...

    def list_runs(self, conversation_id: str, *, scope: str) -> builtins.list[RunRecord]: ...

    def find_runs(
        self, *, scope: str, parent_run_id: str | None = None, conversation_id: str | None = None
    ) -> builtins.list[RunRecord]:
        """The scope's runs started by `parent_run_id` and/or of `conversation_id` (every run of
        the scope when neither is given), oldest first. A conversation of another scope has none."""
        ...

    def append_event(self, event: StepEvent, *, conversation_id: str, scope: str) -> None: ...

    def list_events(self, run_id: str, *, scope: str) -> builtins.list[StepEvent]: ...

    def save_snapshot(self, request: SnapshotRequest) -> Snapshot:
        """Record the conversation's current tip as a snapshot of the run (a pointer, not a copy)."""
        ...

    def list_snapshots(self, run_id: str, *, scope: str) -> builtins.list[Snapshot]: ...

    def record_tool_effect(self, effect: ToolEffect, *, conversation_id: str, scope: str) -> None: ...

    def tool_effects(self, run_id: str, *, scope: str) -> builtins.list[ToolEffect]: ...

    def tool_effects_for_conversation(
        self, conversation_id: str, *, scope: str, status: str | None = None
    ) -> builtins.list[ToolEffect]:
        """The conversation's ledger rows (only those with `status`, when given)."""
        ...

    def run_start(self, conversation_id: str, *, scope: str) -> RunStart | None:
        """What a run start checks, in one read (see `RunStart`); None when the conversation does
        not exist in this scope. Its cost must not grow with the conversation: StepPersistence
        makes this read before every run."""
        ...


@runtime_checkable
class AuditStore(Protocol):
    """What the replay audit reads and writes: its key, receipts, waits, events and quarantine."""

    def audit_key(self) -> bytes:
        """The key for the audit's keyed hashes (`THREADLINE_AUDIT_KEY`, else one kept by the store)."""
        ...

    def record_outcome(
        self,
        conversation_id: str,
        *,
        scope: str,
        run_id: str | None,
        expected_effect: str,
        destination: str | None = None,
        idempotency_key: str | None = None,
        observed_revision: str | None = None,
        evidence_ref: str | None = None,
        strength: ReceiptStrength = 'outcome',
        observed_at: datetime | None = None,
    ) -> OutcomeReceipt:
        """Store a receipt for the outcome of a run (see `OutcomeReceipt` for the strengths)."""
        ...

    def outcomes(self, conversation_id: str, *, scope: str) -> builtins.list[OutcomeReceipt]: ...

    def record_wait(
        self,
        conversation_id: str,
        *,
        scope: str,
        run_id: str | None,
        owner: str,
        decision: str,
        deadline: datetime,
        resume_token: str,
    ) -> WaitRecord:
        """Record that a run waits on `owner` for `decision` until `deadline`."""
        ...

    def resolve_wait(self, conversation_id: str, *, scope: str, resume_token: str) -> None: ...

    def waits(self, conversation_id: str, *, scope: str) -> builtins.list[WaitRecord]: ...

    def record_audit_events(self, conversation_id: str, events: Sequence[AuditEvent], *, scope: str) -> None: ...

    def audit_events(self, conversation_id: str, *, scope: str) -> builtins.list[AuditEvent]: ...

    def quarantine(self, conversation_id: str, *, scope: str, report: dict[str, Any] | None) -> None:
        """Mark the conversation quarantined with a content-free report; `None` lifts it."""
        ...


@runtime_checkable
class NotebookStore(Protocol):
    """Notebooks that outlive a conversation (`threadline.memory`), keyed by scope and namespace.

    Rules: another scope's notebook is reported as missing; a write names the version it
    replaces (0 for a new notebook) and a stale one raises `ConflictError` and writes nothing;
    a write whose `operation_id` was already applied to the notebook returns that write's version
    with `replayed=True` and changes nothing (a retried tool call applies once)."""

    def read_notebook(self, namespace: str, *, scope: str) -> Notebook | None:
        """The notebook, or None when the namespace has none in this scope."""
        ...

    def write_notebook(
        self, namespace: str, content: str, *, scope: str, expected_version: int, operation_id: str | None = None
    ) -> NotebookWrite:
        """Replace the notebook's content, if it is still at `expected_version`."""
        ...

    def delete_notebook(self, namespace: str, *, scope: str) -> bool:
        """Erase the notebook and its operation receipts; whether there was one."""
        ...


@runtime_checkable
class TurnLeases(Protocol):
    """Who is answering a conversation's turn right now, and who is next, across processes and
    machines that share the store (the chat server takes one per turn, so two servers never run
    one conversation's turns at once, and its turns run in the order they arrived).

    Rules:
    - A lease is keyed by scope and conversation: another scope's lease (or line) is invisible and
      never blocks. The conversation need not exist yet.
    - `claim_turn` renews the lease when `holder` already holds it (for `ttl` more seconds, even
      if it lapsed, as long as nobody took it since).
    - Otherwise a claimant that does not get the lease joins the conversation's line, once, at the
      back: its place is its first unanswered claim. A free or expired lease goes to the first
      claimant in line, never to one behind it, and a claimant with nobody ahead takes it at once.
    - A claimant keeps its place only while it keeps asking: one that has not claimed again within
      `patience` seconds (it crashed, or stopped waiting) loses it. `release_turn` gives up the
      lease and the place in line alike. A holder that crashed is outwaited by its `ttl`.
    - Expiry uses the claiming machine's clock, so keep `ttl` and `patience` well above the clock
      skew between machines. Of two claimants racing for a free lease, exactly one gets it.
    - A lease is coordination, not history: it is neither sealed nor synced to disk.
    """

    def claim_turn(
        self, conversation_id: str, *, scope: str, holder: str, ttl: float, patience: float = TURN_PATIENCE
    ) -> bool:
        """Take (or renew) the lease for `ttl` seconds, or wait in line; whether `holder` now holds it."""
        ...

    def release_turn(self, conversation_id: str, *, scope: str, holder: str) -> None:
        """Give the lease up and leave the line, if `holder` is in either (others are left alone)."""
        ...


@runtime_checkable
class SyncStore(ConversationStore, StepStore, AuditStore, NotebookStore, TurnLeases, Protocol):
    """The whole contract: what a backend implements to serve every Threadline feature."""
