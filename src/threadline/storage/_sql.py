"""The conversation log on a SQL database: the logic shared by the SQLite and PostgreSQL stores.

A conversation is a chain of branches. A branch holds the messages at positions
`[fork_position, length)` and inherits the positions before `fork_position` from its parent branch,
which may belong to another conversation (a fork). So a fork copies nothing, `replace` stores a
rewritten history as a new branch of the same conversation (the old tip stays reachable), and an
append writes only the new messages. Every write runs in one transaction, checks the
conversation's revision, and moves it on by one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec

from ..exceptions import ConflictError, ConversationNotFound, CorruptRecordError, MessageValidationError, UserError
from ..messages import ModelMessage, ModelMessagesTypeAdapter, ModelRequest, ModelResponse, RunUsage, ToolCallPart
from ..messages._adapter import to_python
from ..messages._codec import encoder
from ._chain import GENESIS, canonical_json, extend_chain
from ._records import BatchInfo, ChainCheck, ConversationSummary, Provenance, SearchHit, StoredConversation
from ._text import message_text, title_of

__all__ = ['Segment', 'SQLCore', 'now_text', 'parse_time']


def now_text() -> str:
    return datetime.now(tz=UTC).isoformat()


def parse_time(text: str | None) -> datetime:
    return datetime.fromisoformat(text) if text else datetime.fromtimestamp(0, tz=UTC)


def token(prefix: str, value: str) -> str:
    """A single search token standing for a conversation or scope (hex, so no tokenizer splits it)."""
    return prefix + hashlib.sha1(value.encode()).hexdigest()[:24]


_usage_decoder = msgspec.json.Decoder(RunUsage)


@dataclass(frozen=True)
class Segment:
    """Part of a lineage: the messages of `branch` at positions `[start, end)`."""

    branch: int
    conversation_id: str
    start: int
    end: int


@dataclass
class _Conversation:
    id: str
    scope: str
    head_branch: int
    revision: int
    length: int
    title: str | None
    usage: str
    forked_from: str | None
    forked_at: int | None
    chain_head: str
    quarantine: str | None
    created_at: str
    updated_at: str
    message_count: int
    run_count: int


class SQLCore:
    """Conversation-log operations over a DB-API connection (`?` placeholders; dialects adapt them).

    Subclasses provide `_write()` / `_read()` (a connection inside a transaction, locked for writes)
    and the full-text parts (`_index`, `_unindex`, `_search`).
    """

    # -- connection plumbing, provided by the dialect ----------------------------------------
    @contextmanager
    def _write(self) -> Iterator[Any]:  # pragma: no cover - abstract
        raise NotImplementedError
        yield

    @contextmanager
    def _read(self) -> Iterator[Any]:  # pragma: no cover - abstract
        raise NotImplementedError
        yield

    def _q(self, sql: str) -> str:
        return sql

    def _exec(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        return conn.execute(self._q(sql), tuple(params))

    def _one(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._exec(conn, sql, params).fetchone()

    def _all(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return list(self._exec(conn, sql, params).fetchall())

    def _insert_id(self, conn: Any, sql: str, params: Sequence[Any]) -> int:
        return int(self._one(conn, sql + ' RETURNING id', params)[0])

    def _lock_conversation(self, conn: Any, conversation_id: str) -> None:
        """Dialects that lock rows (PostgreSQL) lock the conversation row here."""

    def _index(self, conn: Any, rows: list[tuple[int, str, str, str]]) -> None:  # pragma: no cover
        raise NotImplementedError

    def _unindex(self, conn: Any, conversation_id: str) -> None:  # pragma: no cover
        raise NotImplementedError

    def _search(
        self, conn: Any, terms: list[str], scope: str | None, conversations: list[str] | None, limit: int
    ) -> list[tuple[int, int, int, str | None, float, str]]:  # pragma: no cover
        raise NotImplementedError

    # -- reading rows --------------------------------------------------------------------------
    def _conversation(self, conn: Any, conversation_id: str, scope: str | None) -> _Conversation:
        row = self._one(
            conn,
            'SELECT c.id, c.scope, c.head_branch, c.revision, b.length, c.title, c.usage, c.forked_from, '
            'c.forked_at, c.chain_head, c.quarantine, c.created_at, c.updated_at, c.message_count, c.run_count '
            'FROM conversations c JOIN branches b ON b.id = c.head_branch WHERE c.id = ?',
            (conversation_id,),
        )
        if row is None or (scope is not None and row[1] != scope):
            raise ConversationNotFound(
                f'conversation {conversation_id!r} not found in this scope', conversation_id=conversation_id
            )
        return _Conversation(*row)

    def _lineage(self, conn: Any, head: int) -> list[Segment]:
        segments: list[Segment] = []
        branch: int | None = head
        end: int | None = None
        while branch is not None:
            row = self._one(
                conn,
                'SELECT conversation_id, parent_branch, fork_position, length FROM branches WHERE id = ?',
                (branch,),
            )
            if row is None:
                raise CorruptRecordError(f'branch {branch} of a lineage is missing')
            conversation_id, parent, fork_position, length = row
            stop = length if end is None else min(end, length)
            if stop > fork_position:
                segments.append(Segment(branch, conversation_id, fork_position, stop))
            branch, end = parent, fork_position
        segments.reverse()
        return segments

    def _raw_messages(self, conn: Any, segments: list[Segment], start: int, end: int) -> list[tuple[int, str]]:
        rows: list[tuple[int, str]] = []
        for seg in segments:
            lo, hi = max(seg.start, start), min(seg.end, end)
            if lo < hi:
                rows.extend(
                    self._all(
                        conn,
                        'SELECT position, body FROM messages WHERE branch_id = ? AND position >= ? AND position < ? '
                        'ORDER BY position',
                        (seg.branch, lo, hi),
                    )
                )
        return rows

    def _decode(self, rows: list[tuple[int, str]], conversation_id: str) -> list[ModelMessage]:
        return self._decode_raw(rows, conversation_id)[0]

    def _decode_raw(self, rows: list[tuple[int, str]], conversation_id: str) -> tuple[list[ModelMessage], bytes]:
        if not rows:
            return [], b'[]'
        document = ('[' + ','.join(body for _, body in rows) + ']').encode()
        try:
            return ModelMessagesTypeAdapter.validate_json(document), document
        except MessageValidationError as exc:
            index = int(exc.location.split('[', 1)[1].split(']', 1)[0]) if exc.location.startswith('messages[') else 0
            position = rows[min(index, len(rows) - 1)][0]
            raise CorruptRecordError(
                f'conversation {conversation_id!r}, message {position}: stored message cannot be loaded '
                f'({exc.reason}); it is damaged or was written by a newer version',
                conversation_id=conversation_id,
                position=position,
            ) from None

    def _batches(self, conn: Any, segments: list[Segment]) -> list[BatchInfo]:
        out: list[BatchInfo] = []
        for seg in segments:
            for start, end, provenance, run_id, link, created in self._all(
                conn,
                'SELECT start, end_, provenance, run_id, link, created_at FROM batches WHERE branch_id = ? '
                'AND start < ? AND end_ > ? ORDER BY start',
                (seg.branch, seg.end, seg.start),
            ):
                out.append(
                    BatchInfo(
                        max(start, seg.start),
                        min(end, seg.end),
                        provenance,
                        run_id,
                        link,
                        parse_time(created),
                        start >= seg.start and end <= seg.end,
                    )
                )
        return out

    # -- writing -------------------------------------------------------------------------------
    def _new_branch(self, conn: Any, conversation_id: str, parent: int | None, fork_position: int) -> int:
        return self._insert_id(
            conn,
            'INSERT INTO branches (conversation_id, parent_branch, fork_position, length, created_at) '
            'VALUES (?, ?, ?, ?, ?)',
            (conversation_id, parent, fork_position, fork_position, now_text()),
        )

    def _create(self, conn: Any, conversation_id: str, scope: str) -> _Conversation:
        if not isinstance(scope, str) or not scope:
            raise UserError('scope must be a non-empty string decided by the server (a tenant or owner id)')
        existing = self._one(conn, 'SELECT scope FROM conversations WHERE id = ?', (conversation_id,))
        if existing is not None:
            raise ConversationNotFound(
                f'conversation {conversation_id!r} not found in this scope', conversation_id=conversation_id
            )
        stamp = now_text()
        branch = self._new_branch(conn, conversation_id, None, 0)
        self._exec(
            conn,
            'INSERT INTO conversations (id, scope, head_branch, revision, created_at, updated_at, usage, chain_head) '
            'VALUES (?, ?, ?, 0, ?, ?, ?, ?)',
            (conversation_id, scope, branch, stamp, stamp, '{}', GENESIS),
        )
        return self._conversation(conn, conversation_id, scope)

    def _open_for_write(
        self, conn: Any, conversation_id: str, scope: str, expected_revision: int | None, create: bool
    ) -> _Conversation:
        self._lock_conversation(conn, conversation_id)
        try:
            conversation = self._conversation(conn, conversation_id, scope)
        except ConversationNotFound:
            if not create or expected_revision not in (None, 0):
                raise
            return self._create(conn, conversation_id, scope)
        if expected_revision is not None and expected_revision != conversation.revision:
            raise ConflictError(
                f'conversation {conversation_id!r} is at revision {conversation.revision}, not {expected_revision}: '
                'it changed since you read it. Reload it and apply your change again.',
                conversation_id=conversation_id,
                expected=expected_revision,
                actual=conversation.revision,
            )
        return conversation

    def _link_at(self, conn: Any, segments: list[Segment], position: int) -> str:
        """The chain link after `position` messages of this lineage."""
        if position == 0:
            return GENESIS
        for seg in reversed(segments):
            if seg.start < position:
                row = self._one(
                    conn,
                    'SELECT start, end_, prev_link, link FROM batches WHERE branch_id = ? AND start < ? '
                    'ORDER BY start DESC LIMIT 1',
                    (seg.branch, position),
                )
                if row is None:
                    break
                start, end, prev_link, link = row
                if end == position:
                    return str(link)
                raw = [body for _, body in self._raw_messages(conn, segments, start, position)]
                return extend_chain(prev_link, (r.encode() for r in raw))
        raise CorruptRecordError(f'no chain link recorded before position {position}')

    def _write_batch(
        self,
        conn: Any,
        conversation: _Conversation,
        branch: int,
        start: int,
        messages: Sequence[ModelMessage],
        provenance: Provenance,
        run_id: str | None,
        prev_link: str,
        scope: str,
    ) -> str:
        bodies = [encoder.encode(m) for m in messages]
        link = extend_chain(prev_link, bodies)
        rows = []
        for offset, (message, body) in enumerate(zip(messages, bodies, strict=True)):
            text = body.decode()
            message_id = self._insert_id(
                conn,
                'INSERT INTO messages (branch_id, position, conversation_id, run_id, body) VALUES (?, ?, ?, ?, ?)',
                (branch, start + offset, conversation.id, message.run_id, text),
            )
            rows.append((message_id, message_text(message), conversation.id, scope))
        self._index(conn, rows)
        self._exec(
            conn,
            'INSERT INTO batches (conversation_id, branch_id, start, end_, provenance, run_id, prev_link, link, '
            'created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
            (conversation.id, branch, start, start + len(messages), provenance, run_id, prev_link, link, now_text()),
        )
        self._exec(conn, 'UPDATE branches SET length = ? WHERE id = ?', (start + len(messages), branch))
        return link

    def _finish_write(
        self,
        conn: Any,
        conversation: _Conversation,
        *,
        head: int,
        length: int,
        link: str,
        usage: str | None = None,
        title: str | None = None,
        runs: int = 0,
    ) -> int:
        revision = conversation.revision + 1
        self._exec(
            conn,
            'UPDATE conversations SET head_branch = ?, revision = ?, updated_at = ?, message_count = ?, '
            'chain_head = ?, usage = ?, title = ?, run_count = run_count + ? WHERE id = ?',
            (
                head,
                revision,
                now_text(),
                length,
                link,
                usage if usage is not None else conversation.usage,
                conversation.title or title,
                runs,
                conversation.id,
            ),
        )
        return revision

    def _append_locked(
        self,
        conn: Any,
        conversation: _Conversation,
        messages: Sequence[ModelMessage],
        provenance: Provenance,
        run_id: str | None,
        usage_delta: RunUsage | None = None,
        runs: int = 0,
    ) -> int:
        length = conversation.length
        link = conversation.chain_head
        if messages:
            link = self._write_batch(
                conn,
                conversation,
                conversation.head_branch,
                length,
                messages,
                provenance,
                run_id,
                conversation.chain_head,
                conversation.scope,
            )
        usage = None
        if usage_delta is not None:
            total = _usage_decoder.decode(conversation.usage) if conversation.usage else RunUsage()
            total.incr(usage_delta)
            usage = encoder.encode(total).decode()
        title = None if conversation.title else title_of(list(messages))
        return self._finish_write(
            conn,
            conversation,
            head=conversation.head_branch,
            length=length + len(messages),
            link=link,
            usage=usage,
            title=title,
            runs=runs,
        )

    # -- public operations (synchronous; the stores wrap them for async) ---------------------
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
        """Append `messages` after the stored tip; returns the new revision."""
        _check_append(messages, provenance)
        with self._write() as conn:
            conversation = self._open_for_write(conn, conversation_id, scope, expected_revision, create=True)
            return self._append_locked(conn, conversation, list(messages), provenance, run_id)

    def save_sync(
        self,
        result: Any,
        *,
        scope: str,
        conversation_id: str | None = None,
        expected_revision: int | None = None,
    ) -> int:
        """Append a run's new messages (those not stored yet) and record the run; returns the revision."""
        conversation_id = conversation_id or result.conversation_id
        new = list(result.new_messages())
        _check_messages(new, 'result.new_messages()')
        with self._write() as conn:
            conversation = self._open_for_write(conn, conversation_id, scope, expected_revision, create=True)
            stored = self._stored_for_run(conn, conversation, result.run_id)
            fresh = new[stored:]
            known = self._one(conn, 'SELECT status FROM runs WHERE run_id = ?', (result.run_id,))
            counted = known is not None and known[0] == 'completed'
            if not fresh and counted:
                return conversation.revision  # saved before (or by StepPersistence): nothing to add
            self._record_run(conn, result, conversation_id)
            return self._append_locked(
                conn,
                conversation,
                fresh,
                'server',
                result.run_id,
                usage_delta=None if counted else result.run_usage,
                runs=0 if counted else 1,
            )

    def _stored_for_run(self, conn: Any, conversation: _Conversation, run_id: str) -> int:
        segments = self._lineage(conn, conversation.head_branch)
        total = 0
        for seg in segments:
            row = self._one(
                conn,
                'SELECT COALESCE(SUM(end_ - start), 0) FROM batches WHERE branch_id = ? AND run_id = ? '
                'AND start >= ? AND end_ <= ?',
                (seg.branch, run_id, seg.start, seg.end),
            )
            total += int(row[0])
        return total

    def _record_run(self, conn: Any, result: Any, conversation_id: str) -> None:
        try:
            output = json.dumps(to_python_output(result.output))
        except (TypeError, ValueError):
            output = json.dumps(repr(result.output))
        usage = encoder.encode(result.run_usage).decode()
        stamp = now_text()
        started = next(
            (m.timestamp for m in result.new_messages() if isinstance(m, ModelRequest) and m.timestamp), None
        )
        self._exec(
            conn,
            'INSERT INTO runs (run_id, conversation_id, model_name, output, usage, status, started_at, finished_at) '
            "VALUES (?, ?, ?, ?, ?, 'completed', ?, ?) ON CONFLICT (run_id) DO UPDATE SET output = excluded.output, "
            "usage = excluded.usage, status = 'completed', finished_at = excluded.finished_at, "
            'model_name = excluded.model_name',
            (
                result.run_id,
                conversation_id,
                getattr(result, 'model_name', None),
                output,
                usage,
                started.isoformat() if started else stamp,
                stamp,
            ),
        )

    def replace_sync(
        self,
        conversation_id: str,
        messages: Sequence[ModelMessage],
        *,
        scope: str,
        expected_revision: int,
        provenance: Provenance = 'server',
    ) -> int:
        """Store a rewritten history as a new branch (the old tip stays reachable); returns the revision."""
        _check_messages(messages, 'messages')
        if expected_revision is None:
            raise UserError('replace() needs expected_revision: a rewrite must say which revision it rewrites')
        with self._write() as conn:
            conversation = self._open_for_write(conn, conversation_id, scope, expected_revision, create=False)
            return self._replace_locked(conn, conversation, list(messages), provenance, None)

    def _replace_locked(
        self,
        conn: Any,
        conversation: _Conversation,
        messages: list[ModelMessage],
        provenance: Provenance,
        run_id: str | None,
    ) -> int:
        segments = self._lineage(conn, conversation.head_branch)
        old = self._raw_messages(conn, segments, 0, conversation.length)
        bodies = [encoder.encode(m) for m in messages]
        shared = 0
        for (_, old_body), new_body in zip(old, bodies, strict=False):
            if canonical_json(old_body.encode()) != canonical_json(new_body):
                break
            shared += 1
        if shared == len(old) == len(messages):
            return conversation.revision
        branch = self._new_branch(conn, conversation.id, conversation.head_branch, shared)
        prev_link = self._link_at(conn, segments, shared)
        link = (
            self._write_batch(
                conn, conversation, branch, shared, messages[shared:], provenance, run_id, prev_link, conversation.scope
            )
            if len(messages) > shared
            else prev_link
        )
        return self._finish_write(conn, conversation, head=branch, length=len(messages), link=link)

    def load_sync(self, conversation_id: str, *, scope: str, last: int | None = None) -> StoredConversation:
        """The stored history (or its last `last` messages, cut where no tool call loses its result)."""
        with self._read() as conn:
            conversation = self._conversation(conn, conversation_id, scope)
            segments = self._lineage(conn, conversation.head_branch)
            length = conversation.length
            start = 0 if last is None else max(0, length - last)
            while True:
                rows = self._raw_messages(conn, segments, start, length)
                messages, raw = self._decode_raw(rows, conversation_id)
                safe = 0 if last is None else _safe_start(messages, len(messages) - min(last, len(messages)))
                if safe is not None or start == 0:
                    break
                start = max(0, start - max(last or 0, 16) * 2)
            cut = safe or 0
            batches = self._batches(conn, segments)
        usage = _usage_decoder.decode(conversation.usage) if conversation.usage not in ('{}', '') else RunUsage()
        return StoredConversation(
            conversation_id=conversation.id,
            scope=conversation.scope,
            messages=messages[cut:],
            usage=usage,
            revision=conversation.revision,
            offset=start + cut,
            length=length,
            batches=batches,
            forked_from=conversation.forked_from,
            shared_prefix=conversation.forked_at or 0,
            chain_head=conversation.chain_head,
            title=conversation.title,
            quarantined=json.loads(conversation.quarantine) if conversation.quarantine else None,
            raw=raw if start + cut == 0 else None,
        )

    def list_sync(
        self, scope: str, *, limit: int = 50, offset: int = 0, query: str | None = None
    ) -> list[ConversationSummary]:
        """Conversations of `scope`, most recently updated first; `query` filters on title text."""
        sql = (
            'SELECT id, scope, title, message_count, run_count, created_at, updated_at, revision, forked_from '
            'FROM conversations WHERE scope = ?'
        )
        params: list[Any] = [scope]
        if query:
            sql += " AND LOWER(COALESCE(title, '')) LIKE ?"
            params.append(f'%{query.lower()}%')
        sql += ' ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?'
        params += [limit, offset]
        with self._read() as conn:
            rows = self._all(conn, sql, params)
        return [
            ConversationSummary(r[0], r[1], r[2], r[3], r[4], parse_time(r[5]), parse_time(r[6]), r[7], r[8])
            for r in rows
        ]

    def fork_sync(self, conversation_id: str, *, scope: str, at: int | None = None, new_id: str | None = None) -> str:
        """A new conversation sharing the first `at` messages (all by default) without copying them."""
        from .._uuid import uuid7

        fork_id = new_id or uuid7()
        with self._write() as conn:
            source = self._conversation(conn, conversation_id, scope)
            position = source.length if at is None else at
            if not 0 <= position <= source.length:
                raise UserError(f'fork at={at}: the conversation has {source.length} messages')
            segments = self._lineage(conn, source.head_branch)
            if self._one(conn, 'SELECT 1 FROM conversations WHERE id = ?', (fork_id,)) is not None:
                raise UserError(f'conversation {fork_id!r} already exists')
            branch = self._new_branch(conn, fork_id, source.head_branch, position)
            stamp = now_text()
            self._exec(
                conn,
                'INSERT INTO conversations (id, scope, head_branch, revision, title, created_at, updated_at, '
                'message_count, usage, forked_from, forked_at, chain_head) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?)',
                (
                    fork_id,
                    scope,
                    branch,
                    source.title,
                    stamp,
                    stamp,
                    position,
                    source.usage if position == source.length else '{}',
                    conversation_id,
                    position,
                    self._link_at(conn, segments, position),
                ),
            )
        return fork_id

    def delete_sync(self, conversation_id: str, *, scope: str | None) -> None:
        """Erase the conversation and everything recorded about it, in one transaction. Forks keep
        their shared prefix: it is copied into them first."""
        with self._write() as conn:
            conversation = self._conversation(conn, conversation_id, scope)
            own = [
                r[0] for r in self._all(conn, 'SELECT id FROM branches WHERE conversation_id = ?', (conversation_id,))
            ]
            self._materialize_children(conn, own)
            for table in self._erase_tables():
                self._exec(conn, f'DELETE FROM {table} WHERE conversation_id = ?', (conversation.id,))
            self._unindex(conn, conversation.id)
            self._exec(conn, 'DELETE FROM messages WHERE conversation_id = ?', (conversation.id,))
            self._exec(conn, 'DELETE FROM batches WHERE conversation_id = ?', (conversation.id,))
            self._exec(conn, 'DELETE FROM branches WHERE conversation_id = ?', (conversation.id,))
            self._exec(conn, 'DELETE FROM conversations WHERE id = ?', (conversation.id,))

    def _erase_tables(self) -> list[str]:
        """Tables with a `conversation_id` column whose rows die with the conversation."""
        return ['runs', 'events', 'snapshots', 'tool_effects']

    def _materialize_children(self, conn: Any, own: list[int]) -> None:
        if not own:
            return
        marks = ','.join('?' * len(own))
        children = self._all(
            conn,
            f'SELECT id, conversation_id FROM branches WHERE parent_branch IN ({marks}) AND conversation_id NOT IN '
            f'(SELECT conversation_id FROM branches WHERE id IN ({marks}))',
            [*own, *own],
        )
        for child, child_conversation in children:
            fork_position = self._one(conn, 'SELECT fork_position FROM branches WHERE id = ?', (child,))[0]
            segments = self._lineage(conn, child)
            prefix = [s for s in segments if s.start < fork_position]
            scope = self._one(conn, 'SELECT scope FROM conversations WHERE id = ?', (child_conversation,))[0]
            for seg in prefix:
                batches = self._all(
                    conn,
                    'SELECT start, end_, provenance, run_id, prev_link, link, created_at FROM batches WHERE '
                    'branch_id = ? AND start < ? AND end_ > ?',
                    (seg.branch, seg.end, seg.start),
                )
                rows = self._all(
                    conn,
                    'SELECT position, body, run_id FROM messages WHERE branch_id = ? AND position >= ? AND '
                    'position < ?',
                    (seg.branch, seg.start, min(seg.end, fork_position)),
                )
                index_rows = []
                for position, body, run_id in rows:
                    message_id = self._insert_id(
                        conn,
                        'INSERT INTO messages (branch_id, position, conversation_id, run_id, body) VALUES '
                        '(?, ?, ?, ?, ?)',
                        (child, position, child_conversation, run_id, body),
                    )
                    message = ModelMessagesTypeAdapter.validate_json(f'[{body}]'.encode())[0]
                    index_rows.append((message_id, message_text(message), child_conversation, scope))
                self._index(conn, index_rows)
                for start, end, provenance, run_id, prev_link, link, created in batches:
                    self._exec(
                        conn,
                        'INSERT INTO batches (conversation_id, branch_id, start, end_, provenance, run_id, '
                        'prev_link, link, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
                        (child_conversation, child, start, end, provenance, run_id, prev_link, link, created),
                    )
            self._exec(conn, 'UPDATE branches SET parent_branch = NULL, fork_position = 0 WHERE id = ?', (child,))

    def prune_sync(
        self, *, older_than: datetime | None = None, keep_last: int | None = None, scope: str | None = None
    ) -> list[str]:
        """Delete conversations not updated since `older_than` and/or beyond the newest `keep_last`
        (per scope). `scope=None` covers every scope (an operator action). Returns the deleted ids."""
        if older_than is None and keep_last is None:
            raise UserError('prune() needs older_than, keep_last, or both')
        with self._read() as conn:
            sql = 'SELECT id, scope, updated_at FROM conversations'
            params: list[Any] = []
            if scope is not None:
                sql += ' WHERE scope = ?'
                params.append(scope)
            rows = self._all(conn, sql + ' ORDER BY scope, updated_at DESC, id DESC', params)
        doomed: list[tuple[str, str]] = []
        rank: dict[str, int] = {}
        for conversation_id, conversation_scope, updated in rows:
            rank[conversation_scope] = rank.get(conversation_scope, 0) + 1
            too_old = older_than is not None and parse_time(updated) < older_than
            too_many = keep_last is not None and rank[conversation_scope] > keep_last
            if too_old or too_many:
                doomed.append((conversation_id, conversation_scope))
        for conversation_id, conversation_scope in doomed:
            try:
                self.delete_sync(conversation_id, scope=conversation_scope)
            except ConversationNotFound:
                continue
        return [c for c, _ in doomed]

    def search_sync(
        self, query: str, *, scope: str, conversation_id: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        """Ranked full-text matches of every word of `query` in `scope` (or one conversation)."""
        terms = _terms(query)
        if not terms:
            return []
        with self._read() as conn:
            allowed: list[Segment] | None = None
            conversations: list[str] | None = None
            if conversation_id is not None:
                conversation = self._conversation(conn, conversation_id, scope)
                allowed = self._lineage(conn, conversation.head_branch)
                conversations = sorted({s.conversation_id for s in allowed})
            hits: list[SearchHit] = []
            fetch = limit if allowed is None else limit * 4
            while True:
                rows = self._search(conn, terms, scope, conversations, fetch)
                hits = []
                for _, branch, position, run_id, score, snippet in rows:
                    owner = conversation_id
                    if allowed is not None:
                        if not any(s.branch == branch and s.start <= position < s.end for s in allowed):
                            continue
                    else:
                        owner = self._owner(conn, branch)
                    hits.append(SearchHit(owner or '', position, score, snippet, run_id))
                if len(hits) >= limit or len(rows) < fetch:
                    return hits[:limit]
                fetch *= 4

    def _owner(self, conn: Any, branch: int) -> str:
        row = self._one(conn, 'SELECT conversation_id FROM branches WHERE id = ?', (branch,))
        return str(row[0]) if row else ''

    def verify_sync(self, conversation_id: str, *, scope: str) -> ChainCheck:
        """Re-hash the stored JSON of the whole history against its chain: every batch's recorded
        link, then the conversation's chain head."""
        with self._read() as conn:
            conversation = self._conversation(conn, conversation_id, scope)
            segments = self._lineage(conn, conversation.head_branch)
            rows = self._raw_messages(conn, segments, 0, conversation.length)
            batches = self._batches(conn, segments)
        if [p for p, _ in rows] != list(range(conversation.length)):
            return ChainCheck(False, len(rows), conversation.chain_head, reason='stored positions have gaps')
        recorded = {b.end: (b.start, b.link) for b in batches}
        link = GENESIS
        for position, body in rows:
            link = extend_chain(link, [body.encode()])
            batch = recorded.get(position + 1)
            if batch is not None and batch[1] != link:
                return ChainCheck(False, position + 1, conversation.chain_head, batch[0], 'a stored message changed')
        if link != conversation.chain_head:
            return ChainCheck(False, len(rows), conversation.chain_head, None, 'the chain head does not match')
        return ChainCheck(True, len(rows), link)

    def lineage_sync(self, conversation_id: str, *, scope: str) -> list[tuple[str, int, int]]:
        """Which conversation stored each stretch `[start, end)` of the history (a fork's shared
        prefix belongs to its parent)."""
        with self._read() as conn:
            conversation = self._conversation(conn, conversation_id, scope)
            return [(s.conversation_id, s.start, s.end) for s in self._lineage(conn, conversation.head_branch)]

    def branches_sync(self, conversation_id: str, *, scope: str) -> list[tuple[int, int]]:
        """(branch id, length) of every branch of the conversation, oldest first; the head is the
        conversation's current history, the others are tips a `replace` left reachable."""
        with self._read() as conn:
            self._conversation(conn, conversation_id, scope)
            rows = self._all(
                conn, 'SELECT id, length FROM branches WHERE conversation_id = ? ORDER BY id', (conversation_id,)
            )
        return [(int(r[0]), int(r[1])) for r in rows]

    def raw_history_sync(self, conversation_id: str, *, scope: str) -> bytes:
        """The stored history as one JSON document, exactly as stored (for export and audits)."""
        with self._read() as conn:
            conversation = self._conversation(conn, conversation_id, scope)
            rows = self._raw_messages(conn, self._lineage(conn, conversation.head_branch), 0, conversation.length)
        return ('[' + ','.join(body for _, body in rows) + ']').encode()


def to_python_output(output: Any) -> Any:
    """A run's output as JSON-compatible data (pydantic models and dataclasses included)."""
    return msgspec.to_builtins(to_python(output), enc_hook=_output_hook)


def _output_hook(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value)


def _check_append(messages: Any, provenance: str) -> None:
    _check_messages(messages, 'messages')
    if provenance not in ('server', 'client'):
        raise UserError(f"provenance must be 'server' or 'client', not {provenance!r}")


def _check_messages(messages: Any, name: str) -> None:
    if isinstance(messages, (str, bytes, dict)):
        raise UserError(f'{name} must be a list of messages')
    for index, message in enumerate(messages):
        if not isinstance(message, (ModelRequest, ModelResponse)):
            raise UserError(f'{name}[{index}] is a {type(message).__name__}, not a ModelRequest or ModelResponse')


def _is_cut(messages: list[ModelMessage], cut: int) -> bool:
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


def _safe_start(messages: list[ModelMessage], start: int) -> int | None:
    """Where to cut a window of the last messages: the first safe cut at or after `start` (so the
    window holds at most the messages asked for), else the nearest one before it. None when no
    cut in `messages` is safe (the caller fetches earlier messages)."""
    for cut in range(start, len(messages)):
        if _is_cut(messages, cut):
            return cut
    for cut in range(min(start, len(messages)) - 1, -1, -1):
        if _is_cut(messages, cut):
            return cut
    return None


_TERM_CHARS = str.maketrans({c: ' ' for c in '"\'*^:()[]{}-+.,;!?/\\<>=&|~`@#$%'})


def _terms(query: str) -> list[str]:
    return [t for t in query.translate(_TERM_CHARS).lower().split() if t][:16]
