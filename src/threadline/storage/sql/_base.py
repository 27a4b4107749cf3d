"""The conversation log on a SQL database: rows, lineages and the locked writes every operation is built from.

A conversation is a chain of branches. A branch holds the messages at positions
`[fork_position, length)` and inherits the positions before `fork_position` from its parent branch,
which may belong to another conversation (a fork). So a fork copies nothing, `replace` stores a
rewritten history as a new branch of the same conversation (the old tip stays reachable), and an
append writes only the new messages. Every write runs in one transaction, checks the
conversation's revision, and moves it on by one.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

import msgspec

from threadline.exceptions import ConversationNotFound, CorruptRecordError, MessageValidationError, UserError
from threadline.messages import ModelMessage, ModelMessagesTypeAdapter, RunUsage
from threadline.messages.wire import encode_each
from threadline.storage._neutral import (
    added_usage,
    check_scope,
    check_writable,
    not_found,
    now_text,
    parse_time,
    run_not_found,
    shared_prefix,
)
from threadline.storage._records import BatchInfo, Provenance
from threadline.storage.index._text import message_text, title_of
from threadline.storage.sql._dialect import Connection, Cursor, Dialect, Row, scalar
from threadline.storage.sql._seal import Ident, seal_touched
from threadline.trust.sealing import GENESIS, StoreSeal, extend_chain, extend_chain_messages

__all__ = ['Conversation', 'SQLBase', 'Segment', 'token', 'usage_decoder']


def token(prefix: str, value: str) -> str:
    """A single search token standing for a conversation or scope (hex, so no tokenizer splits it)."""
    return prefix + hashlib.sha1(value.encode()).hexdigest()[:24]


usage_decoder = msgspec.json.Decoder(RunUsage)
_DECODE_CHUNK = 250
"""Messages decoded per step of a load. A chunk's JSON is held three times while it is decoded (the
rows, the joined text, its bytes): at 2,000 that was 30% over a plain decode's peak at 10k
messages; at 250 it is under 5% at every length, and the load is no slower."""


@dataclass(frozen=True)
class Segment:
    """Part of a lineage: the messages of `branch` at positions `[start, end)`."""

    branch: int
    conversation_id: str
    start: int
    end: int


@dataclass
class Conversation:
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


class SQLBase:
    """What every SQL operation is built from: statements through the dialect, rows read into
    records, and the locked write steps (open, write a batch, finish) that keep revisions."""

    _dialect: Dialect
    _seal: StoreSeal
    _location: str | None
    """Where this database is, for the tip book (None: it dies with the process)."""
    _tx: threading.local
    _sealed_schema: bool
    """Whether the database has the seals table (a read-only database may predate it)."""

    @contextmanager
    def _write(self, *, durable: bool = True) -> Iterator[Connection]:
        """One write transaction. The records it touches are sealed before it commits, and the
        new seal of each conversation is recorded in the tip book after it commits."""
        touched: dict[str, list[Ident]] = {}
        self._tx.touched = touched
        try:
            with self._dialect.write(durable=durable) as conn:
                yield conn
                tips = seal_touched(self, conn, self._seal, touched, getattr(self._tx, 'adopting', False))
        finally:
            self._tx.touched = None
        for conversation_id, tip in tips:
            if tip is None:
                self._seal.forget(self._location, conversation_id)
            else:
                self._seal.advance(self._location, conversation_id, tip)

    def _touch(self, conversation_id: str, *idents: Ident) -> None:
        """Mark records of `conversation_id` as written by the current transaction (to be sealed)."""
        self._tx.touched.setdefault(conversation_id, []).extend(idents)

    def _read(self) -> AbstractContextManager[Connection]:
        return self._dialect.read()

    def _exec(self, conn: Connection, sql: str, params: Sequence[object] = ()) -> Cursor:
        return conn.execute(self._dialect.q(sql), tuple(params))

    def _one(self, conn: Connection, sql: str, params: Sequence[object] = ()) -> Row | None:
        return self._exec(conn, sql, params).fetchone()

    def _all(self, conn: Connection, sql: str, params: Sequence[object] = ()) -> list[Row]:
        return list(self._exec(conn, sql, params).fetchall())

    def _only(self, conn: Connection, sql: str, params: Sequence[object] = ()) -> Row:
        """The row a statement must find: one the store's own references point at."""
        row = self._one(conn, sql, params)
        if row is None:
            raise CorruptRecordError(
                'a stored record refers to a row that is not there; restore from a backup (`threadline db restore`)'
            )
        return row

    def _insert_id(self, conn: Connection, sql: str, params: Sequence[object]) -> int:
        return int(scalar(self._exec(conn, sql + ' RETURNING id', params)))

    # -- reading rows --------------------------------------------------------------------------
    def _conversation(self, conn: Connection, conversation_id: str, scope: str) -> Conversation:
        check_scope(scope)
        row = self._one(
            conn,
            'SELECT c.id, c.scope, c.head_branch, c.revision, b.length, c.title, c.usage, c.forked_from, '
            'c.forked_at, c.chain_head, c.quarantine, c.created_at, c.updated_at, c.message_count, c.run_count '
            'FROM conversations c JOIN branches b ON b.id = c.head_branch WHERE c.id = ?',
            (conversation_id,),
        )
        if row is None or row[1] != scope:
            raise not_found(conversation_id)
        return Conversation(*row)

    def _lineage(self, conn: Connection, head: int) -> list[Segment]:
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
            branch, end = parent, min(stop, fork_position)  # a fork point below the parent's own shares less
        segments.reverse()
        return segments

    def _raw_messages(self, conn: Connection, segments: list[Segment], start: int, end: int) -> list[tuple[int, str]]:
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

    def _load_messages(
        self, conn: Connection, segments: list[Segment], start: int, end: int, conversation_id: str
    ) -> list[ModelMessage]:
        """Decode positions `[start, end)` chunk by chunk as the rows arrive, so a long history's
        peak memory is its messages plus one chunk of JSON, not messages plus all of its JSON."""
        messages: list[ModelMessage] = []
        for seg in segments:
            lo, hi = max(seg.start, start), min(seg.end, end)
            if lo >= hi:
                continue
            cursor = self._exec(
                conn,
                'SELECT position, body FROM messages WHERE branch_id = ? AND position >= ? AND position < ? '
                'ORDER BY position',
                (seg.branch, lo, hi),
            )
            while chunk := cursor.fetchmany(_DECODE_CHUNK):
                messages.extend(self._decode(chunk, conversation_id))
        return messages

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

    def _batches(self, conn: Connection, segments: list[Segment], first: int = 0) -> list[BatchInfo]:
        """The batches of the lineage that hold messages at or after position `first`."""
        out: list[BatchInfo] = []
        for seg in segments:
            if seg.end <= first:
                continue
            low = max(seg.start, first)
            # A branch's batches lie end to end, so the ones holding `low` onwards start at the last
            # start at or before `low`: an index range from there, not a walk over every batch
            # before it (`start < end AND end_ > low` alone scanned the whole branch).
            for start, end, provenance, run_id, link, created in self._all(
                conn,
                'SELECT start, end_, provenance, run_id, link, created_at FROM batches WHERE branch_id = ? '
                'AND start >= COALESCE((SELECT MAX(start) FROM batches WHERE branch_id = ? AND start <= ?), 0) '
                'AND start < ? AND end_ > ? ORDER BY start',
                (seg.branch, seg.branch, low, seg.end, low),
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
    def _new_branch(self, conn: Connection, conversation_id: str, parent: int | None, fork_position: int) -> int:
        branch = self._insert_id(
            conn,
            'INSERT INTO branches (conversation_id, parent_branch, fork_position, length, created_at) '
            'VALUES (?, ?, ?, ?, ?)',
            (conversation_id, parent, fork_position, fork_position, now_text()),
        )
        self._touch(conversation_id, ('branch', branch))
        return branch

    def _create(self, conn: Connection, conversation_id: str, scope: str) -> Conversation:
        if not isinstance(scope, str) or not scope:
            raise UserError('scope must be a non-empty string decided by the server (a tenant or owner id)')
        existing = self._one(conn, 'SELECT scope FROM conversations WHERE id = ?', (conversation_id,))
        if existing is not None:
            raise not_found(conversation_id)
        stamp = now_text()
        branch = self._new_branch(conn, conversation_id, None, 0)
        self._exec(
            conn,
            'INSERT INTO conversations (id, scope, head_branch, revision, created_at, updated_at, usage, chain_head) '
            'VALUES (?, ?, ?, 0, ?, ?, ?, ?)',
            (conversation_id, scope, branch, stamp, stamp, '{}', GENESIS),
        )
        self._touch(conversation_id, ('head',))
        return self._conversation(conn, conversation_id, scope)

    def _open_for_write(
        self,
        conn: Connection,
        conversation_id: str,
        scope: str,
        expected_revision: int | None,
        create: bool,
        *,
        changes_history: bool = True,
    ) -> Conversation:
        """The conversation, locked for a write that expects `expected_revision`. A quarantined
        conversation refuses any write that changes its history or starts a run."""
        self._dialect.lock_conversation(conn, conversation_id)
        try:
            conversation = self._conversation(conn, conversation_id, scope)
        except ConversationNotFound:
            if not create or expected_revision not in (None, 0):
                raise
            return self._create(conn, conversation_id, scope)
        check_writable(
            conversation_id,
            conversation.revision,
            expected_revision,
            conversation.quarantine,
            changes_history=changes_history,
        )
        return conversation

    def _link_at(self, conn: Connection, segments: list[Segment], position: int) -> str:
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
        conn: Connection,
        conversation: Conversation,
        branch: int,
        start: int,
        messages: Sequence[ModelMessage],
        provenance: Provenance,
        run_id: str | None,
        prev_link: str,
        scope: str,
    ) -> str:
        bodies = encode_each(messages)
        link = extend_chain_messages(prev_link, messages)
        self._dialect.insert_messages(
            conn,
            [
                (branch, start + offset, conversation.id, message.run_id, body.decode(), message_text(message), scope)
                for offset, (message, body) in enumerate(zip(messages, bodies, strict=True))
            ],
        )
        self._exec(
            conn,
            'INSERT INTO batches (conversation_id, branch_id, start, end_, provenance, run_id, prev_link, link, '
            'created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
            (conversation.id, branch, start, start + len(messages), provenance, run_id, prev_link, link, now_text()),
        )
        self._exec(conn, 'UPDATE branches SET length = ? WHERE id = ?', (start + len(messages), branch))
        self._touch(conversation.id, ('batch', branch, start), ('branch', branch))
        return link

    def _finish_write(
        self,
        conn: Connection,
        conversation: Conversation,
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
        self._touch(conversation.id, ('head',))
        return revision

    def _append_locked(
        self,
        conn: Connection,
        conversation: Conversation,
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
        usage = added_usage(conversation.usage, usage_delta)
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

    def _replace_locked(
        self,
        conn: Connection,
        conversation: Conversation,
        messages: list[ModelMessage],
        provenance: Provenance,
        run_id: str | None,
    ) -> int:
        segments = self._lineage(conn, conversation.head_branch)
        old = self._raw_messages(conn, segments, 0, conversation.length)
        shared = shared_prefix([body for _, body in old], encode_each(messages))
        if shared == len(old) == len(messages):
            return conversation.revision
        return self._branch_locked(conn, conversation, segments, shared, messages[shared:], provenance, run_id)

    def _branch_locked(
        self,
        conn: Connection,
        conversation: Conversation,
        segments: list[Segment],
        at: int,
        tail: list[ModelMessage],
        provenance: Provenance,
        run_id: str | None,
        usage_delta: RunUsage | None = None,
        runs: int = 0,
    ) -> int:
        """A new head branch holding the first `at` messages of the head's history, then `tail`."""
        branch = self._new_branch(conn, conversation.id, conversation.head_branch, at)
        prev_link = self._link_at(conn, segments, at)
        link = prev_link
        if tail:
            link = self._write_batch(conn, conversation, branch, at, tail, provenance, run_id, link, conversation.scope)
        return self._finish_write(
            conn,
            conversation,
            head=branch,
            length=at + len(tail),
            link=link,
            usage=added_usage(conversation.usage, usage_delta),
            title=title_of(tail) if at == 0 else None,
            runs=runs,
        )

    def _claim_run(self, conn: Connection, run_id: str, conversation_id: str, model_name: str | None = None) -> None:
        """Create the run record for `conversation_id`, or check that the existing one is its own
        (one statement when the run exists, as it does for every write of a run but its first)."""
        owner_of = 'SELECT conversation_id FROM runs WHERE run_id = ?'
        owner = self._one(conn, owner_of, (run_id,))
        if owner is None:  # created here, unless a concurrent writer just did (then read theirs)
            owner = self._one(
                conn,
                'INSERT INTO runs (run_id, conversation_id, model_name, status, started_at) '
                "VALUES (?, ?, ?, 'running', ?) ON CONFLICT (run_id) DO NOTHING RETURNING conversation_id",
                (run_id, conversation_id, model_name, now_text()),
            ) or self._only(conn, owner_of, (run_id,))
        if owner[0] != conversation_id:
            raise run_not_found(run_id)
