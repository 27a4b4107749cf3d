"""`FileStore`: append-only JSON lines, one file per conversation, no database.

Every change to a conversation is one JSON line appended to its file and fsynced before the call
returns: a batch of messages, a new branch, a run record, an event, a snapshot, a ledger row. A
line is the unit of atomicity: a process killed mid-write leaves a torn last line, which readers
ignore and the next writer cuts off. Writers take an exclusive `flock` on the file, so concurrent
processes serialize. Search scans the files of the scope (fine for a laptop's worth of history;
use SQLite or PostgreSQL past that). Good for greppable, diffable, rsync-able history.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import hashlib
import json
import os
import secrets
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from .._uuid import uuid7
from ..exceptions import (
    BackendError,
    ConflictError,
    ConversationNotFound,
    CorruptRecordError,
    MessageValidationError,
    UserError,
)
from ..messages import ModelMessage, ModelMessagesTypeAdapter, RunUsage
from ..messages._codec import encoder
from ._chain import GENESIS, canonical_json, extend_chain
from ._facade import AsyncStoreMixin
from ._records import (
    AuditEvent,
    BatchInfo,
    ChainCheck,
    ConversationSummary,
    OutcomeReceipt,
    Provenance,
    RunRecord,
    SearchHit,
    Snapshot,
    StepEvent,
    StoredConversation,
    ToolEffect,
    WaitRecord,
    check_strength,
)
from ._sql import _check_append, _check_messages, _safe_start, _terms, now_text, parse_time, to_python_output
from ._text import message_text, title_of

__all__ = ['FileStore']


@dataclass
class _Branch:
    id: int
    parent: int | None
    fork_position: int
    owner: str
    messages: dict[int, str] = field(default_factory=dict)
    length: int = 0


@dataclass
class _Conv:
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
    branches: dict[int, _Branch] = field(default_factory=dict)
    batches: list[dict[str, Any]] = field(default_factory=list)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    effects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    waits: list[dict[str, Any]] = field(default_factory=list)
    audit_events: list[dict[str, Any]] = field(default_factory=list)
    quarantine: dict[str, Any] | None = None


def _key(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:32]


class FileStore(AsyncStoreMixin):
    """Conversations as append-only JSON-lines files under `directory`."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.root = Path(directory)
        try:
            (self.root / 'conversations').mkdir(parents=True, exist_ok=True)
            (self.root / 'runs').mkdir(exist_ok=True)
        except OSError as exc:
            raise BackendError(f'cannot use {self.root} as a FileStore directory: {exc}') from None
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f'FileStore({str(self.root)!r})'

    def close(self) -> None:
        """Nothing to release: every call opens and closes its files."""

    # -- files ------------------------------------------------------------------------------
    def _path(self, conversation_id: str) -> Path:
        return self.root / 'conversations' / f'{_key(conversation_id)}.jsonl'

    @contextmanager
    def _locked(self, conversation_id: str) -> Iterator[Path]:
        path = self._path(conversation_id)
        with self._lock, open(path.with_suffix('.lock'), 'a') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield path
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _append_lines(self, path: Path, records: list[dict[str, Any]]) -> None:
        data = b''.join(msgspec.json.encode(r) + b'\n' for r in records)
        try:
            with open(path, 'ab') as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise BackendError(f'cannot write {path.name}: {exc}') from None

    def _read_lines(self, path: Path, conversation_id: str) -> list[dict[str, Any]]:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise BackendError(f'cannot read {path.name}: {exc}') from None
        lines = raw.split(b'\n')
        if lines and lines[-1] != b'':
            lines = lines[:-1]  # a torn last line from a crash: never acknowledged, so ignored
        records = []
        for number, line in enumerate(lines):
            if not line:
                continue
            try:
                records.append(msgspec.json.decode(line))
            except msgspec.DecodeError:
                raise CorruptRecordError(
                    f'conversation {conversation_id!r}: line {number + 1} of its file is damaged',
                    conversation_id=conversation_id,
                ) from None
        return records

    def _cut_torn_tail(self, path: Path) -> None:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return
        if raw and not raw.endswith(b'\n'):
            with open(path, 'r+b') as handle:
                handle.truncate(raw.rfind(b'\n') + 1)
                os.fsync(handle.fileno())

    def _state(self, conversation_id: str) -> _Conv | None:
        records = self._read_lines(self._path(conversation_id), conversation_id)
        if not records or records[0].get('t') != 'create':
            return None
        return _replay(records)

    def _get(self, conversation_id: str, scope: str | None) -> _Conv:
        state = self._state(conversation_id)
        if state is None or (scope is not None and state.scope != scope):
            raise ConversationNotFound(
                f'conversation {conversation_id!r} not found in this scope', conversation_id=conversation_id
            )
        return state

    # -- lineage ----------------------------------------------------------------------------
    def _segments(self, state: _Conv, branch_id: int | None = None) -> list[tuple[_Branch, int, int]]:
        out: list[tuple[_Branch, int, int]] = []
        branch: _Branch | None = state.branches[state.head if branch_id is None else branch_id]
        owner_state = state
        end: int | None = None
        while branch is not None:
            stop = branch.length if end is None else min(end, branch.length)
            if stop > branch.fork_position:
                out.append((branch, branch.fork_position, stop))
            end = branch.fork_position
            if branch.parent is not None:
                branch = owner_state.branches[branch.parent]
            elif owner_state.parent_branch is not None and end > 0:
                parent_id, parent_branch = owner_state.parent_branch
                parent = self._state(parent_id)
                if parent is None:
                    raise CorruptRecordError(f'conversation {state.id!r}: its fork parent {parent_id!r} is missing')
                owner_state, branch = parent, parent.branches[parent_branch]
            else:
                branch = None
        out.reverse()
        return out

    def _bodies(
        self, state: _Conv, start: int = 0, end: int | None = None, branch_id: int | None = None
    ) -> list[tuple[int, str]]:
        out = []
        for branch, lo, hi in self._segments(state, branch_id):
            for position in range(max(lo, start), min(hi, end if end is not None else hi)):
                out.append((position, branch.messages[position]))
        return out

    def _length(self, state: _Conv) -> int:
        return state.branches[state.head].length

    def _decode(self, rows: list[tuple[int, str]], conversation_id: str) -> list[ModelMessage]:
        if not rows:
            return []
        try:
            return ModelMessagesTypeAdapter.validate_json(('[' + ','.join(b for _, b in rows) + ']').encode())
        except MessageValidationError as exc:
            raise CorruptRecordError(
                f'conversation {conversation_id!r}: a stored message cannot be loaded ({exc.reason})',
                conversation_id=conversation_id,
            ) from None

    # -- writes -----------------------------------------------------------------------------
    def _open(
        self, path: Path, conversation_id: str, scope: str, expected: int | None, create: bool
    ) -> tuple[_Conv, list[dict[str, Any]]]:
        self._cut_torn_tail(path)
        state = self._state(conversation_id)
        if state is not None and state.scope != scope:
            raise ConversationNotFound(
                f'conversation {conversation_id!r} not found in this scope', conversation_id=conversation_id
            )
        if state is None:
            if not create or expected not in (None, 0):
                raise ConversationNotFound(
                    f'conversation {conversation_id!r} not found in this scope', conversation_id=conversation_id
                )
            if not isinstance(scope, str) or not scope:
                raise UserError('scope must be a non-empty string decided by the server (a tenant or owner id)')
            record = {'t': 'create', 'id': conversation_id, 'scope': scope, 'at': now_text(), 'head': 1}
            return _replay([record]), [record]
        if expected is not None and expected != state.revision:
            raise ConflictError(
                f'conversation {conversation_id!r} is at revision {state.revision}, not {expected}: it changed since you '
                'read it. Reload it and apply your change again.',
                conversation_id=conversation_id,
                expected=expected,
                actual=state.revision,
            )
        return state, []

    def _batch(
        self,
        state: _Conv,
        branch: int,
        start: int,
        messages: Sequence[ModelMessage],
        provenance: str,
        run_id: str | None,
        prev_link: str,
    ) -> dict[str, Any]:
        bodies = [encoder.encode(m) for m in messages]
        return {
            't': 'batch',
            'branch': branch,
            'start': start,
            'bodies': [b.decode() for b in bodies],
            'provenance': provenance,
            'run_id': run_id,
            'prev_link': prev_link,
            'link': extend_chain(prev_link, bodies),
            'at': now_text(),
            'title': None if state.title else title_of(list(messages)),
        }

    def append_sync(
        self,
        conversation_id: str,
        messages: Sequence[ModelMessage],
        *,
        scope: str,
        expected_revision: int | None = None,
        provenance: Provenance = 'server',
        run_id: str | None = None,
    ) -> int:
        _check_append(messages, provenance)
        with self._locked(conversation_id) as path:
            state, records = self._open(path, conversation_id, scope, expected_revision, create=True)
            if messages:
                records.append(
                    self._batch(state, state.head, self._length(state), messages, provenance, run_id, state.chain_head)
                )
            self._append_lines(path, [*records, _REV])
            return state.revision + 1

    def save_sync(
        self, result: Any, *, scope: str, conversation_id: str | None = None, expected_revision: int | None = None
    ) -> int:
        conversation_id = conversation_id or result.conversation_id
        new = list(result.new_messages())
        _check_messages(new, 'result.new_messages()')
        with self._locked(conversation_id) as path:
            state, records = self._open(path, conversation_id, scope, expected_revision, create=True)
            stored = sum(
                b['end'] - b['start']
                for b in state.batches
                if b['run_id'] == result.run_id and b['branch'] in state.branches
            )
            counted = state.runs.get(result.run_id, {}).get('status') == 'completed'
            fresh = new[stored:]
            if not fresh and counted:
                return state.revision
            if fresh:
                records.append(
                    self._batch(
                        state, state.head, self._length(state), fresh, 'server', result.run_id, state.chain_head
                    )
                )
            records.append(_run_record(result, conversation_id, add_usage=not counted))
            self._index_run(result.run_id, conversation_id)
            self._append_lines(path, [*records, _REV])
            return state.revision + 1

    def replace_sync(
        self,
        conversation_id: str,
        messages: Sequence[ModelMessage],
        *,
        scope: str,
        expected_revision: int,
        provenance: Provenance = 'server',
        run_id: str | None = None,
    ) -> int:
        _check_messages(messages, 'messages')
        if expected_revision is None:
            raise UserError('replace() needs expected_revision: a rewrite must say which revision it rewrites')
        with self._locked(conversation_id) as path:
            state, records = self._open(path, conversation_id, scope, expected_revision, create=False)
            records += self._replace_records(state, list(messages), provenance, run_id)
            if not records:
                return state.revision
            self._append_lines(path, [*records, _REV])
            return state.revision + 1

    def _replace_records(
        self, state: _Conv, messages: list[ModelMessage], provenance: str, run_id: str | None
    ) -> list[dict[str, Any]]:
        old = self._bodies(state, 0, self._length(state))
        bodies = [encoder.encode(m) for m in messages]
        shared = 0
        for (_, old_body), new_body in zip(old, bodies, strict=False):
            if canonical_json(old_body.encode()) != canonical_json(new_body):
                break
            shared += 1
        if shared == len(old) == len(messages):
            return []
        branch = max(state.branches) + 1
        prev = extend_chain(GENESIS, [b.encode() for _, b in old[:shared]])
        records: list[dict[str, Any]] = [{'t': 'branch', 'id': branch, 'parent': state.head, 'fork_position': shared}]
        if len(messages) > shared:
            records.append(self._batch(state, branch, shared, messages[shared:], provenance, run_id, prev))
        else:
            records.append({'t': 'head', 'link': prev})
        return records

    def load_sync(self, conversation_id: str, *, scope: str, last: int | None = None) -> StoredConversation:
        with self._lock:
            state = self._get(conversation_id, scope)
            rows = self._bodies(state)
        messages = self._decode(rows, conversation_id)
        raw = ('[' + ','.join(b for _, b in rows) + ']').encode()
        cut = 0 if last is None else (_safe_start(messages, len(messages) - min(last, len(messages))) or 0)
        batches = [
            BatchInfo(b['start'], b['end'], b['provenance'], b['run_id'], b['link'], parse_time(b['at']), b['full'])
            for b in self._lineage_batches(state)
        ]
        return StoredConversation(
            conversation_id=state.id,
            scope=state.scope,
            messages=messages[cut:],
            usage=copy.copy(state.usage),
            revision=state.revision,
            offset=cut,
            length=len(messages),
            batches=batches,
            forked_from=state.forked_from,
            shared_prefix=state.forked_at or 0,
            chain_head=state.chain_head,
            title=state.title,
            quarantined=state.quarantine,
            raw=raw if cut == 0 else None,
        )

    def _lineage_batches(self, state: _Conv) -> list[dict[str, Any]]:
        out = []
        own = {(b['branch'], b['start']): b for b in state.batches}
        for branch, lo, hi in self._segments(state):
            source = (
                own
                if branch.owner == state.id
                else {(b['branch'], b['start']): b for b in self._get(branch.owner, None).batches}
            )
            for (branch_id, _), batch in sorted(source.items(), key=lambda kv: kv[0][1]):
                if branch_id == branch.id and batch['start'] < hi and batch['end'] > lo:
                    full = batch['start'] >= lo and batch['end'] <= hi
                    out.append({**batch, 'start': max(batch['start'], lo), 'end': min(batch['end'], hi), 'full': full})
        return out

    def list_sync(
        self, scope: str, *, limit: int = 50, offset: int = 0, query: str | None = None
    ) -> list[ConversationSummary]:
        rows = []
        for state in self._all_states():
            if state.scope != scope or (query and query.lower() not in (state.title or '').lower()):
                continue
            rows.append(
                ConversationSummary(
                    state.id,
                    state.scope,
                    state.title,
                    self._length(state),
                    len(state.runs),
                    parse_time(state.created_at),
                    parse_time(state.updated_at),
                    state.revision,
                    state.forked_from,
                )
            )
        rows.sort(key=lambda r: (r.updated_at, r.conversation_id), reverse=True)
        return rows[offset : offset + limit]

    def _all_states(self) -> list[_Conv]:
        out = []
        for path in (self.root / 'conversations').glob('*.jsonl'):
            records = self._read_lines(path, path.stem)
            if records and records[0].get('t') == 'create':
                out.append(_replay(records))
        return out

    def fork_sync(self, conversation_id: str, *, scope: str, at: int | None = None, new_id: str | None = None) -> str:
        fork_id = new_id or uuid7()
        with self._lock:
            source = self._get(conversation_id, scope)
            length = self._length(source)
            position = length if at is None else at
            if not 0 <= position <= length:
                raise UserError(f'fork at={at}: the conversation has {length} messages')
            link = extend_chain(GENESIS, [b.encode() for _, b in self._bodies(source, 0, position)])
            with self._locked(fork_id) as path:
                if self._state(fork_id) is not None:
                    raise UserError(f'conversation {fork_id!r} already exists')
                self._append_lines(
                    path,
                    [
                        {
                            't': 'create',
                            'id': fork_id,
                            'scope': scope,
                            'at': now_text(),
                            'head': 1,
                            'forked_from': conversation_id,
                            'forked_at': position,
                            'parent_branch': [conversation_id, source.head],
                            'link': link,
                            'title': source.title,
                            'usage': msgspec.to_builtins(source.usage) if position == length else None,
                        }
                    ],
                )
        return fork_id

    def delete_sync(self, conversation_id: str, *, scope: str | None) -> None:
        with self._lock:
            state = self._get(conversation_id, scope)
            for child in self._all_states():
                if child.parent_branch is not None and child.parent_branch[0] == conversation_id:
                    self._materialize(child)
            path = self._path(conversation_id)
            graveyard = path.with_suffix('.deleted')
            os.replace(path, graveyard)
            graveyard.unlink()
            path.with_suffix('.lock').unlink(missing_ok=True)
            for run_id in state.runs:
                (self.root / 'runs' / _key(run_id)).unlink(missing_ok=True)

    def _materialize(self, child: _Conv) -> None:
        """Copy the prefix a fork shares with a conversation about to be deleted into the fork."""
        with self._locked(child.id) as path:
            prefix = self._bodies(child, 0, child.forked_at or 0)
            root = min(child.branches)
            self._append_lines(path, [{'t': 'materialize', 'branch': root, 'bodies': [b for _, b in prefix]}])

    def prune_sync(
        self, *, older_than: datetime | None = None, keep_last: int | None = None, scope: str | None = None
    ) -> list[str]:
        if older_than is None and keep_last is None:
            raise UserError('prune() needs older_than, keep_last, or both')
        states = sorted(
            (s for s in self._all_states() if scope is None or s.scope == scope),
            key=lambda s: (s.scope, s.updated_at, s.id),
            reverse=True,
        )
        rank: dict[str, int] = {}
        doomed = []
        for state in states:
            rank[state.scope] = rank.get(state.scope, 0) + 1
            if (older_than is not None and parse_time(state.updated_at) < older_than) or (
                keep_last is not None and rank[state.scope] > keep_last
            ):
                doomed.append(state)
        for state in doomed:
            self.delete_sync(state.id, scope=state.scope)
        return [s.id for s in doomed]

    def search_sync(
        self, query: str, *, scope: str, conversation_id: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        terms = _terms(query)
        if not terms:
            return []
        states = (
            [self._get(conversation_id, scope)]
            if conversation_id
            else [s for s in self._all_states() if s.scope == scope]
        )
        hits = []
        for state in states:
            rows = (
                self._bodies(state)
                if conversation_id
                else [(p, b) for br in state.branches.values() for p, b in br.messages.items()]
            )
            for position, body in rows:
                text = message_text(self._decode([(position, body)], state.id)[0])
                words = text.lower().split()
                counts = [sum(1 for w in words if term in w) for term in terms]
                if all(counts):
                    score = sum(counts) / (1 + len(words) / 50)
                    at = text.lower().find(terms[0])
                    snippet = text[max(0, at - 40) : at + 60].replace(
                        text[at : at + len(terms[0])], f'[{text[at : at + len(terms[0])]}]'
                    )
                    run_id = msgspec.json.decode(body).get('run_id')
                    hits.append(SearchHit(state.id, position, score, snippet, run_id))
        hits.sort(key=lambda h: (-h.score, h.conversation_id, h.position))
        return hits[:limit]

    def verify_sync(self, conversation_id: str, *, scope: str) -> ChainCheck:
        """Re-hash the stored JSON against every whole batch's link and the chain head."""
        with self._lock:
            state = self._get(conversation_id, scope)
            rows = self._bodies(state)
            batches = self._lineage_batches(state)
        recorded = {b['end']: (b['start'], b['link']) for b in batches if b['full']}
        link = GENESIS
        for position, body in rows:
            link = extend_chain(link, [body.encode()])
            batch = recorded.get(position + 1)
            if batch is not None and batch[1] != link:
                return ChainCheck(False, position + 1, state.chain_head, batch[0], 'a stored message changed')
        if link != state.chain_head:
            return ChainCheck(False, len(rows), state.chain_head, None, 'the chain head does not match')
        return ChainCheck(True, len(rows), link)

    def raw_history_sync(self, conversation_id: str, *, scope: str) -> bytes:
        state = self._get(conversation_id, scope)
        return ('[' + ','.join(b for _, b in self._bodies(state)) + ']').encode()

    def lineage_sync(self, conversation_id: str, *, scope: str) -> list[tuple[str, int, int]]:
        state = self._get(conversation_id, scope)
        return [(branch.owner, lo, hi) for branch, lo, hi in self._segments(state)]

    def tool_effects_for_conversation_sync(self, conversation_id: str) -> list[ToolEffect]:
        state = self._state(conversation_id)
        return [msgspec.convert(e, ToolEffect) for e in state.effects.values()] if state else []

    def branches_sync(self, conversation_id: str, *, scope: str) -> list[tuple[int, int]]:
        state = self._get(conversation_id, scope)
        return [(b.id, b.length) for b in sorted(state.branches.values(), key=lambda b: b.id)]

    # -- step store ---------------------------------------------------------------------------
    def _run_owner(self, run_id: str) -> str | None:
        try:
            return (self.root / 'runs' / _key(run_id)).read_text()
        except FileNotFoundError:
            return None

    def _index_run(self, run_id: str, conversation_id: str) -> None:
        target = self.root / 'runs' / _key(run_id)
        if not target.exists():
            tmp = target.with_suffix('.tmp')
            tmp.write_text(conversation_id)
            os.replace(tmp, target)

    def step_write_sync(
        self,
        conversation_id: str,
        *,
        scope: str,
        run_id: str,
        expected_revision: int | None,
        messages: Sequence[ModelMessage] = (),
        history: Sequence[ModelMessage] | None = None,
        provenance: str = 'server',
        events: Sequence[StepEvent] = (),
        snapshot: tuple[str, int, str] | None = None,
        effect: ToolEffect | None = None,
        register: bool = False,
        finish: tuple[str, str | None, RunUsage | None] | None = None,
    ) -> int:
        with self._locked(conversation_id) as path:
            state, records = self._open(path, conversation_id, scope, expected_revision, create=True)
            bumps = bool(records)
            if register:
                self._index_run(run_id, conversation_id)
                records.append({'t': 'run', 'run_id': run_id, 'status': 'running', 'started_at': now_text()})
            length = self._length(state)
            if history is not None:
                changed = self._replace_records(state, list(history), provenance, run_id)
                records += changed
                bumps = bumps or bool(changed)
                length = len(history)
            elif messages:
                records.append(self._batch(state, state.head, length, messages, provenance, run_id, state.chain_head))
                length += len(messages)
                bumps = True
            records += [
                {'t': 'event', **msgspec.to_builtins(e)}
                for e in events
                if not _seen(state.events, e.run_id, e.idempotency_key)
            ]
            if snapshot is not None and not _seen(state.snapshots, run_id, snapshot[2]):
                head = next((r['id'] for r in records if r.get('t') == 'branch'), state.head)
                records.append(
                    {
                        't': 'snapshot',
                        'run_id': run_id,
                        'branch_id': head,
                        'position': length,
                        'state': snapshot[0],
                        'step_index': snapshot[1],
                        'idempotency_key': snapshot[2],
                        'timestamp': now_text(),
                    }
                )
            if effect is not None:
                records.append({'t': 'effect', **msgspec.to_builtins(effect)})
            if finish is not None:
                status, output, usage = finish
                records.append(
                    {
                        't': 'finish',
                        'run_id': run_id,
                        'status': status,
                        'output': output,
                        'usage': msgspec.to_builtins(usage) if usage else None,
                        'at': now_text(),
                    }
                )
                bumps = bumps or (status == 'completed' and usage is not None)
            if bumps:
                records.append(_REV)
            if records:
                self._append_lines(path, records)
            return state.revision + (1 if bumps else 0)

    def conversation_state_sync(self, conversation_id: str, *, scope: str) -> tuple[int, int] | None:
        state = self._state(conversation_id)
        if state is None or state.scope != scope:
            return None
        return state.revision, self._length(state)

    def load_at_sync(self, conversation_id: str, *, scope: str, branch_id: int, position: int) -> list[ModelMessage]:
        state = self._get(conversation_id, scope)
        return self._decode(self._bodies(state, 0, position, branch_id), conversation_id)

    def record_tool_effect_sync(self, effect: ToolEffect, *, conversation_id: str | None) -> None:
        if conversation_id is None:
            return
        with self._locked(conversation_id) as path:
            self._append_lines(path, [{'t': 'effect', **msgspec.to_builtins(effect)}])

    def _owner_state(self, run_id: str) -> _Conv | None:
        owner = self._run_owner(run_id)
        return self._state(owner) if owner else None

    def get_run_sync(self, run_id: str) -> RunRecord | None:
        state = self._owner_state(run_id)
        run = state.runs.get(run_id) if state else None
        return _to_run(run_id, state.id, run) if state and run else None

    def list_runs_sync(self, conversation_id: str) -> list[RunRecord]:
        state = self._state(conversation_id)
        if state is None:
            return []
        return sorted((_to_run(r, state.id, v) for r, v in state.runs.items()), key=lambda r: (r.started_at, r.run_id))

    def list_events_sync(self, run_id: str) -> list[StepEvent]:
        state = self._owner_state(run_id)
        return [msgspec.convert(e, StepEvent) for e in state.events if e['run_id'] == run_id] if state else []

    def list_snapshots_sync(self, run_id: str) -> list[Snapshot]:
        state = self._owner_state(run_id)
        if state is None:
            return []
        return [
            Snapshot(
                s['run_id'],
                state.id,
                s['position'],
                s['branch_id'],
                s['state'],
                s['step_index'],
                parse_time(s['timestamp']),
            )
            for s in state.snapshots
            if s['run_id'] == run_id
        ]

    def tool_effects_sync(self, run_id: str) -> list[ToolEffect]:
        state = self._owner_state(run_id)
        if state is None:
            return []
        return [msgspec.convert(e, ToolEffect) for (r, _), e in state.effects.items() if r == run_id]

    # -- audit records ------------------------------------------------------------------------
    def audit_key_sync(self) -> bytes:
        configured = os.environ.get('THREADLINE_AUDIT_KEY')
        if configured:
            return configured.encode()
        path = self.root / 'audit.key'
        with self._lock:
            if not path.exists():
                tmp = path.with_suffix(f'.{os.getpid()}.tmp')
                tmp.write_text(secrets.token_hex(32))
                os.chmod(tmp, 0o600)
                with contextlib.suppress(FileExistsError):  # a concurrent creator's key wins, not both
                    os.link(tmp, path)  # atomic create
                tmp.unlink(missing_ok=True)
            return bytes.fromhex(path.read_text().strip())

    def _add(self, conversation_id: str, scope: str, record: dict[str, Any]) -> None:
        with self._locked(conversation_id) as path:
            self._get(conversation_id, scope)
            self._append_lines(path, [record])

    def record_outcome_sync(
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
        strength: str = 'outcome',
        observed_at: datetime | None = None,
    ) -> OutcomeReceipt:
        check_strength(strength)
        stamp = observed_at.isoformat() if observed_at else now_text()
        record = {
            't': 'outcome',
            'conversation_id': conversation_id,
            'run_id': run_id,
            'expected_effect': expected_effect,
            'destination': destination,
            'idempotency_key': idempotency_key,
            'observed_revision': observed_revision,
            'evidence_ref': evidence_ref,
            'strength': strength,
            'observed_at': stamp,
        }
        self._add(conversation_id, scope, record)
        return msgspec.convert(_strip(record), OutcomeReceipt)

    def outcomes_sync(self, conversation_id: str, *, scope: str) -> list[OutcomeReceipt]:
        return [msgspec.convert(_strip(r), OutcomeReceipt) for r in self._get(conversation_id, scope).outcomes]

    def record_wait_sync(
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
        record = {
            't': 'wait',
            'conversation_id': conversation_id,
            'run_id': run_id,
            'owner': owner,
            'decision': decision,
            'deadline': deadline.isoformat(),
            'resume_token': resume_token,
            'created_at': now_text(),
        }
        self._add(conversation_id, scope, record)
        return msgspec.convert(_strip(record), WaitRecord)

    def resolve_wait_sync(self, conversation_id: str, *, scope: str, resume_token: str) -> None:
        self._add(conversation_id, scope, {'t': 'wait_resolved', 'resume_token': resume_token, 'at': now_text()})

    def waits_sync(self, conversation_id: str, *, scope: str) -> list[WaitRecord]:
        return [msgspec.convert(_strip(w), WaitRecord) for w in self._get(conversation_id, scope).waits]

    def record_audit_events_sync(self, conversation_id: str, events: list[AuditEvent], *, scope: str) -> None:
        if events:
            with self._locked(conversation_id) as path:
                self._get(conversation_id, scope)
                self._append_lines(path, [{'t': 'audit_event', **msgspec.to_builtins(e)} for e in events])

    def audit_events_sync(self, conversation_id: str, *, scope: str) -> list[AuditEvent]:
        return [msgspec.convert(_strip(e), AuditEvent) for e in self._get(conversation_id, scope).audit_events]

    def quarantine_sync(self, conversation_id: str, *, scope: str, report: dict[str, Any] | None) -> None:
        self._add(conversation_id, scope, {'t': 'quarantine', 'report': report})

    def finish_run_sync(
        self, run_id: str, *, status: str, output_json: str | None = None, usage: RunUsage | None = None
    ) -> None:
        owner = self._run_owner(run_id)
        if owner is None:
            return
        with self._locked(owner) as path:
            self._append_lines(
                path,
                [
                    {
                        't': 'finish',
                        'run_id': run_id,
                        'status': status,
                        'output': output_json,
                        'usage': None,
                        'at': now_text(),
                    }
                ],
            )


_REV: dict[str, Any] = {'t': 'rev'}


def _strip(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in ('t', 'at')}


def _seen(records: list[dict[str, Any]], run_id: str, key: str | None) -> bool:
    return key is not None and any(r['run_id'] == run_id and r.get('idempotency_key') == key for r in records)


def _run_record(result: Any, conversation_id: str, *, add_usage: bool) -> dict[str, Any]:
    try:
        output = json.dumps(to_python_output(result.output))
    except (TypeError, ValueError):
        output = json.dumps(repr(result.output))
    return {
        't': 'finish',
        'run_id': result.run_id,
        'status': 'completed',
        'output': output,
        'usage': msgspec.to_builtins(result.run_usage),
        'add_usage': add_usage,
        'model_name': getattr(result, 'model_name', None),
        'at': now_text(),
        'register': True,
    }


def _to_run(run_id: str, conversation_id: str, run: dict[str, Any]) -> RunRecord:
    usage = msgspec.convert(run['usage'], RunUsage) if run.get('usage') else None
    return RunRecord(
        run_id,
        conversation_id,
        parse_time(run.get('started_at')),
        parse_time(run['finished_at']) if run.get('finished_at') else None,
        run.get('model_name'),
        run.get('output'),
        usage,
        run.get('status', 'running'),
    )


def _replay(records: list[dict[str, Any]]) -> _Conv:
    """The conversation's state after applying its records in order."""
    create = records[0]
    state = _Conv(create['id'], create['scope'], create['at'], create['at'], head=1, title=create.get('title'))
    state.branches[1] = _Branch(1, None, create.get('forked_at') or 0, state.id, length=create.get('forked_at') or 0)
    if create.get('forked_from'):
        state.forked_from, state.forked_at = create['forked_from'], create['forked_at']
        state.parent_branch = (create['parent_branch'][0], create['parent_branch'][1])
        state.chain_head = create['link']
        if create.get('usage'):
            state.usage = msgspec.convert(create['usage'], RunUsage)
        state.revision = 1
    for record in records[1:]:
        kind = record['t']
        state.updated_at = record.get('at', state.updated_at)
        if kind == 'batch':
            branch = state.branches[record['branch']]
            for offset, body in enumerate(record['bodies']):
                branch.messages[record['start'] + offset] = body
            end = record['start'] + len(record['bodies'])
            branch.length = end
            state.head, state.chain_head = record['branch'], record['link']
            state.title = state.title or record.get('title')
            state.batches.append(
                {
                    'branch': record['branch'],
                    'start': record['start'],
                    'end': end,
                    'provenance': record['provenance'],
                    'run_id': record['run_id'],
                    'link': record['link'],
                    'at': record['at'],
                }
            )
        elif kind == 'branch':
            state.branches[record['id']] = _Branch(
                record['id'], record['parent'], record['fork_position'], state.id, length=record['fork_position']
            )
            state.head = record['id']
        elif kind == 'head':
            state.chain_head = record['link']
        elif kind == 'rev':
            state.revision += 1
        elif kind == 'materialize':
            branch = state.branches[record['branch']]
            for position, body in enumerate(record['bodies']):
                branch.messages[position] = body
            branch.fork_position = 0
            state.parent_branch = None
        elif kind == 'run':
            state.runs.setdefault(record['run_id'], {'status': 'running', 'started_at': record['started_at']})
        elif kind == 'finish':
            run = state.runs.setdefault(record['run_id'], {'started_at': record['at']})
            first_completion = run.get('status') != 'completed' and record['status'] == 'completed'
            run.update(
                status=record['status'],
                finished_at=record['at'],
                output=record.get('output'),
                model_name=record.get('model_name', run.get('model_name')),
            )
            if record.get('usage'):
                run['usage'] = record['usage']
            if first_completion and record.get('usage') and record.get('add_usage', True):
                state.usage.incr(msgspec.convert(record['usage'], RunUsage))
        elif kind == 'event':
            state.events.append(record)
        elif kind == 'outcome':
            state.outcomes.append(record)
        elif kind == 'wait':
            state.waits.append(record)
        elif kind == 'wait_resolved':
            for wait in state.waits:
                if wait['resume_token'] == record['resume_token']:
                    wait['resolved_at'] = record['at']
        elif kind == 'audit_event':
            state.audit_events.append(record)
        elif kind == 'quarantine':
            state.quarantine = record['report']
        elif kind == 'snapshot':
            state.snapshots.append(record)
        elif kind == 'effect':
            key = (record['run_id'], record['tool_call_id'])
            previous = state.effects.get(key, {})
            merged = {
                **previous,
                **{k: v for k, v in record.items() if k != 't' and (v is not None or k not in previous)},
            }
            state.effects[key] = merged
    return state
