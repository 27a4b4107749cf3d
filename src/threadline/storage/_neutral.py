"""Backend-neutral helpers every store shares: timestamps, argument checks, windows, search terms."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from threadline.exceptions import ConflictError, ConversationNotFound, ConversationQuarantined, RunNotFound, UserError
from threadline.messages import ModelMessage, ModelRequest, ModelResponse, RunUsage, ToolCallPart
from threadline.messages.wire import encoder, to_python
from threadline.storage._records import EVERY_SCOPE, RunLineage, StepEvent, StepWrite, ToolEffect
from threadline.trust.sealing import canonical_json

if TYPE_CHECKING:
    from threadline.storage._contract import FinishedRun

__all__ = [
    'added_usage',
    'check_every_scope',
    'finished_ids',
    'check_append',
    'check_branch_at',
    'check_branch_position',
    'check_messages',
    'check_scope',
    'check_writable',
    'shared_prefix',
    'check_step_write',
    'is_cut',
    'not_found',
    'now_text',
    'parse_time',
    'quarantined',
    'run_not_found',
    'safe_start',
    'search_terms',
    'stale_notebook',
    'to_python_output',
]


def now_text() -> str:
    return datetime.now(tz=UTC).isoformat()


def not_found(conversation_id: str) -> ConversationNotFound:
    """The one error for a conversation that is missing or belongs to another scope: the two are
    indistinguishable to the caller, so an id never reveals that another tenant has it."""
    return ConversationNotFound(
        f'conversation {conversation_id!r} not found in this scope', conversation_id=conversation_id
    )


def run_not_found(run_id: str) -> RunNotFound:
    """The one error for a run that is missing, or recorded in another conversation or scope."""
    return RunNotFound(f'run {run_id!r} not found in this conversation and scope')


def stale_notebook(namespace: str, expected: int, actual: int) -> ConflictError:
    """The error for a notebook write made from a stale read (nothing was written)."""
    return ConflictError(
        f'notebook {namespace!r} is at version {actual}, not {expected}: it changed since it was read. Read it '
        'again and write over what is there.',
        conversation_id=namespace,
        expected=expected,
        actual=actual,
    )


def quarantined(conversation_id: str) -> ConversationQuarantined:
    """The error for a write to a quarantined conversation."""
    return ConversationQuarantined(
        f'conversation {conversation_id!r} is quarantined (an audit refused it): release it with '
        'threadline.audit.release_quarantine(...) after review before running or appending',
        conversation_id=conversation_id,
    )


def check_writable(
    conversation_id: str, revision: int, expected: int | None, quarantine: object, *, changes_history: bool
) -> None:
    """A write that expects `expected` may go ahead: the revision still matches (else
    `ConflictError`), and a quarantined conversation is not changed (else `ConversationQuarantined`)."""
    if expected is not None and expected != revision:
        raise ConflictError(
            f'conversation {conversation_id!r} is at revision {revision}, not {expected}: it changed since you read '
            'it. Reload it and apply your change again.',
            conversation_id=conversation_id,
            expected=expected,
            actual=revision,
        )
    if changes_history and quarantine is not None:
        raise quarantined(conversation_id)


def shared_prefix(old: Sequence[str], new: Sequence[bytes]) -> int:
    """How many leading messages a rewritten history keeps unchanged (compared as canonical JSON)."""
    shared = 0
    for old_body, new_body in zip(old, new, strict=False):
        if canonical_json(old_body.encode()) != canonical_json(new_body):
            break
        shared += 1
    return shared


def finished_ids(result: FinishedRun, conversation_id: str | None) -> tuple[str, str]:
    """(run id, conversation id) of a result being saved; a hand-built result without them is refused."""
    conversation_id = conversation_id or result.conversation_id
    if not result.run_id or not conversation_id:
        missing = 'run_id' if not result.run_id else 'conversation_id'
        raise UserError(f'save(): the result has no {missing}; save a result a run returned, or pass conversation_id=')
    return str(result.run_id), str(conversation_id)


def check_continuation(result: FinishedRun, new: int, stored: int, of_run: int, conversation_id: str) -> None:
    """Refuse to save a run that continues history the conversation does not hold.

    A run over `message_history` of N messages saves only its own new messages; if the
    conversation stores fewer than N (less what this run already stored), the earlier messages
    were never saved and the stored conversation would silently miss them. A result without
    `all_messages()` (a hand-built one) is not checked; a history shorter than what is stored
    (trimmed by a history processor or compaction) is fine."""
    every = getattr(result, 'all_messages', None)
    if not callable(every):
        return
    before = len(every()) - new
    # What the run stored beyond its new messages (a resumed run's trailing request, which step
    # persistence stamps with the run) is history the conversation holds.
    held = stored - min(of_run, new)
    if before > held:
        raise UserError(
            f'save(): the run continues {before} messages of history, but conversation {conversation_id!r} stores '
            f'{held} of them: save or append the earlier messages first (nothing was saved)'
        )


def check_branch_at(branch_at: object, expected_revision: int | None) -> None:
    """`save(branch_at=)` rewrites the head, so it names the revision it rewrites (as `replace`
    does) and a position that is a whole number."""
    if branch_at is None:
        return
    if not isinstance(branch_at, int) or isinstance(branch_at, bool) or branch_at < 0:
        raise UserError(f'save(): branch_at must be a whole number of stored messages, not {branch_at!r}')
    if expected_revision is None:
        raise UserError('save(branch_at=) needs expected_revision: a new branch must say which revision it leaves')


def check_branch_position(at: int, length: int, stored: int, conversation_id: str) -> None:
    """A branch starts within the stored history, and only for a run stored nowhere yet (a run's
    messages live on one branch)."""
    if at > length:
        raise UserError(f'save(): branch_at={at} is past the {length} messages conversation {conversation_id!r} stores')
    if stored:
        raise UserError(f'save(branch_at=): this run is already stored in conversation {conversation_id!r}')


def check_scope(scope: object) -> str:
    """A scope must be a non-empty string: `None`, `''` and non-strings are refused, never taken as
    "every scope" or a default, so a missing tenant id can never widen what a call sees."""
    if not isinstance(scope, str) or not scope:
        raise UserError(f'scope must be a non-empty string decided by the server (a tenant or owner id), not {scope!r}')
    return scope


def check_step_write(write: StepWrite) -> None:
    """Every record of a step write belongs to its run: events or a ledger row of another run would
    land in a conversation that does not own that run."""
    records: list[StepEvent | ToolEffect] = [*write.events, *write.effects]
    strays = [r.run_id for r in records if r.run_id != write.run_id]
    if strays:
        raise UserError(f'a step write for run {write.run_id!r} carries records of run {strays[0]!r}')
    if write.lineage is not None:
        check_lineage(write.lineage)


MAX_METADATA = 64
"""Entries of a run's lineage metadata (each key and value a string of at most 10,000 characters)."""


def check_lineage(lineage: RunLineage) -> None:
    """A run's lineage is small strings: printable ids of at most 512 characters, and metadata of
    at most `MAX_METADATA` entries of valid UTF-8 strings (kept on every run record, so bounded)."""
    for name in ('parent_run_id', 'registration_id', 'agent_name'):
        value = getattr(lineage, name)
        if value is not None and not (_encodable(value) and 0 < len(value) <= 512 and value.isprintable()):
            raise UserError(f'lineage.{name} must be a non-empty printable string of at most 512 characters')
    metadata = lineage.metadata
    if not isinstance(metadata, Mapping) or len(metadata) > MAX_METADATA:
        raise UserError(f'lineage.metadata must be a mapping of at most {MAX_METADATA} entries')
    for key, value in metadata.items():
        if not (_encodable(key) and _encodable(value) and len(key) <= 10_000 and len(value) <= 10_000):
            shown = key[:40] if isinstance(key, str) else type(key).__name__
            raise UserError(f'lineage.metadata[{shown!r}] must map a string to a string of at most 10,000 characters')


def _encodable(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def parse_time(text: str | None) -> datetime:
    return datetime.fromisoformat(text) if text else datetime.fromtimestamp(0, tz=UTC)


def to_python_output(output: Any) -> Any:
    """A run's output as JSON-compatible data (pydantic models and dataclasses included)."""
    return msgspec.to_builtins(to_python(output), enc_hook=_output_hook)


def _output_hook(value: Any) -> Any:

    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value)


def check_append(messages: object, provenance: str) -> None:
    check_messages(messages, 'messages')
    if provenance not in ('server', 'client'):
        raise UserError(f"provenance must be 'server' or 'client', not {provenance!r}")


def check_messages(messages: object, name: str) -> None:
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Iterable):
        raise UserError(f'{name} must be a list of messages')
    for index, message in enumerate(messages):
        if not isinstance(message, (ModelRequest, ModelResponse)):
            raise UserError(f'{name}[{index}] is a {type(message).__name__}, not a ModelRequest or ModelResponse')


def is_cut(messages: list[ModelMessage], cut: int) -> bool:
    """A history may start at `cut` when that is a request and every tool result after it has its call."""
    if not isinstance(messages[cut], ModelRequest):
        return False
    calls: set[str] = set()
    for message in messages[cut:]:
        parts: list[Any] = list(message.parts)
        for part in parts:
            if isinstance(part, ToolCallPart):
                calls.add(part.tool_call_id)
            elif (
                part.part_kind in ('tool-return', 'retry-prompt') and part.tool_name and part.tool_call_id not in calls
            ):
                return False
    return True


def safe_start(messages: list[ModelMessage], start: int) -> int | None:
    """Where to cut a window of the last messages: the first safe cut at or after `start` (so the
    window holds at most the messages asked for), else the nearest one before it. None when no
    cut in `messages` is safe (the caller fetches earlier messages)."""
    for cut in range(start, len(messages)):
        if is_cut(messages, cut):
            return cut
    for cut in range(min(start, len(messages)) - 1, -1, -1):
        if is_cut(messages, cut):
            return cut
    return None


_TERM_CHARS = str.maketrans({c: ' ' for c in '"\'*^:()[]{}-+.,;!?/\\<>=&|~`@#$%\x00'})


def search_terms(query: str) -> list[str]:
    return [t for t in query.translate(_TERM_CHARS).lower().split() if t][:16]


def check_every_scope(scope: object) -> None:
    """An operator action across tenants takes `EVERY_SCOPE` and nothing else."""

    if scope is not EVERY_SCOPE:
        raise UserError('scope_counts() reaches every tenant: pass scope=EVERY_SCOPE to say so, not one scope')


_usage = msgspec.json.Decoder(RunUsage)


def added_usage(encoded: str | None, delta: RunUsage | None) -> str | None:
    """A stored usage total (its JSON) with `delta` added, as JSON again (None: unchanged)."""
    if delta is None:
        return None
    total = _usage.decode(encoded) if encoded else RunUsage()
    total.incr(delta)
    return encoder.encode(total).decode()
