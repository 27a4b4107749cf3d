"""The conversation log's operations on SQL: append, save, replace, load, list, fork, delete,
prune, search, verify (see `_sql_base` for how branches make forks and rewrites cheap)."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from threadline._uuid import uuid7
from threadline.exceptions import ConversationNotFound, UserError
from threadline.messages import ModelMessage, ModelMessagesTypeAdapter, ModelRequest, RunUsage
from threadline.messages.wire import decode_messages, encoder
from threadline.storage._contract import FinishedRun
from threadline.storage._neutral import (
    check_append,
    check_branch_at,
    check_branch_position,
    check_continuation,
    check_every_scope,
    check_messages,
    check_scope,
    finished_ids,
    now_text,
    parse_time,
    safe_start,
    to_python_output,
)
from threadline.storage._records import (
    EVERY_SCOPE,
    ChainCheck,
    ConversationSummary,
    EveryScope,
    Provenance,
    SearchHit,
    StoredConversation,
)
from threadline.storage._verify import report
from threadline.storage.index._query import Term, parse_query
from threadline.storage.index._rank import snippet_of_text
from threadline.storage.index._text import message_text, role_of, time_of
from threadline.storage.sql._base import Conversation, Segment, SQLBase, usage_decoder
from threadline.storage.sql._dialect import Connection
from threadline.storage.sql._seal import check as check_seals

__all__ = ['LogOps']

# Tables with a `conversation_id` column whose rows die with the conversation.
_ERASED_WITH_CONVERSATION = (
    'runs',
    'events',
    'snapshots',
    'tool_effects',
    'outcome_receipts',
    'wait_records',
    'audit_events',
    'seals',
)

_LOOK_BACK = 8
"""How many messages before a `last` window its first read takes, to find a safe cut in one read."""


class LogOps(SQLBase):
    """The conversation-log half of the contract."""

    def append(
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
        check_append(messages, provenance)
        with self._write() as conn:
            conversation = self._open_for_write(conn, conversation_id, scope, expected_revision, create=True)
            return self._append_locked(conn, conversation, list(messages), provenance, run_id)

    def save(
        self,
        result: FinishedRun,
        *,
        scope: str,
        conversation_id: str | None = None,
        expected_revision: int | None = None,
        branch_at: int | None = None,
    ) -> int:
        """Append a run's new messages (those not stored yet) and record the run; returns the
        revision. With `branch_at`, the run's messages follow the first `branch_at` stored ones
        on a new branch instead (see `ConversationStore.save`)."""
        run_id, conversation_id = finished_ids(result, conversation_id)
        new = list(result.new_messages())
        check_messages(new, 'result.new_messages()')
        check_branch_at(branch_at, expected_revision)
        with self._write() as conn:
            conversation = self._open_for_write(
                conn, conversation_id, scope, expected_revision, create=branch_at is None
            )
            self._claim_run(conn, run_id, conversation_id)
            stored = self._stored_for_run(conn, conversation, run_id)
            if branch_at is not None and branch_at != conversation.length:
                return self._save_branch(conn, conversation, result, new, branch_at, stored)
            check_continuation(result, len(new), conversation.length, stored, conversation_id)
            fresh = new[stored:]
            known = self._one(conn, 'SELECT status FROM runs WHERE run_id = ?', (run_id,))
            counted = known is not None and known[0] == 'completed'
            if not fresh and counted:
                return conversation.revision  # saved before (or by StepPersistence): nothing to add
            self._record_run(conn, result, conversation_id)
            return self._append_locked(
                conn,
                conversation,
                fresh,
                'server',
                run_id,
                usage_delta=None if counted else result.run_usage,
                runs=0 if counted else 1,
            )

    def _save_branch(
        self,
        conn: Connection,
        conversation: Conversation,
        result: FinishedRun,
        new: list[ModelMessage],
        at: int,
        stored: int,
    ) -> int:
        check_branch_position(at, conversation.length, stored, conversation.id)
        check_continuation(result, len(new), at, 0, conversation.id)
        self._record_run(conn, result, conversation.id)
        segments = self._lineage(conn, conversation.head_branch)
        return self._branch_locked(
            conn, conversation, segments, at, new, 'server', result.run_id, usage_delta=result.run_usage, runs=1
        )

    def _stored_for_run(self, conn: Connection, conversation: Conversation, run_id: str) -> int:
        segments = self._lineage(conn, conversation.head_branch)
        total = 0
        for seg in segments:
            # Only equalities, so the (run_id, branch_id) index answers it: a range on `start` made
            # SQLite pick the branch index and scan every batch of a long conversation.
            rows = self._all(
                conn, 'SELECT start, end_ FROM batches WHERE run_id = ? AND branch_id = ?', (run_id, seg.branch)
            )
            total += sum(end - start for start, end in rows if start >= seg.start and end <= seg.end)
        return total

    def _record_run(self, conn: Connection, result: FinishedRun, conversation_id: str) -> None:
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
        check_messages(messages, 'messages')
        if expected_revision is None:
            raise UserError('replace() needs expected_revision: a rewrite must say which revision it rewrites')
        with self._write() as conn:
            conversation = self._open_for_write(conn, conversation_id, scope, expected_revision, create=False)
            return self._replace_locked(conn, conversation, list(messages), provenance, None)

    def load(self, conversation_id: str, *, scope: str, last: int | None = None) -> StoredConversation:
        """The stored history (or its last `last` messages, cut where no tool call loses its result)."""
        with self._dialect.scan_read('the load') as conn:
            conversation = self._conversation(conn, conversation_id, scope)
            segments = self._lineage(conn, conversation.head_branch)
            length = conversation.length
            # A window of the last messages rarely starts at a safe cut (it often starts at a
            # response or a tool result), so the first read looks a few messages further back
            # instead of decoding a second, larger window.
            start = 0 if last is None else max(0, length - last - _LOOK_BACK)
            while True:
                messages = self._load_messages(conn, segments, start, length, conversation_id)
                safe = 0 if last is None else safe_start(messages, len(messages) - min(last, len(messages)))
                if safe is not None or start == 0:
                    break
                start = max(0, start - max(last or 0, 16) * 2)
            cut = safe or 0
            batches = self._batches(conn, segments, start + cut)
        usage = usage_decoder.decode(conversation.usage) if conversation.usage not in ('{}', '') else RunUsage()
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
        )

    def list(
        self, scope: str, *, limit: int = 50, offset: int = 0, query: str | None = None
    ) -> builtins.list[ConversationSummary]:
        """Conversations of `scope`, most recently updated first; `query` filters on title text."""
        check_scope(scope)
        sql = (
            'SELECT id, scope, title, message_count, run_count, created_at, updated_at, revision, forked_from '
            'FROM conversations WHERE scope = ?'
        )
        params: builtins.list[Any] = [scope]
        if query:
            sql += " AND LOWER(COALESCE(title, '')) LIKE ? ESCAPE '\\'"
            literal = query.lower().replace('\\', '\\\\').replace('%', '\\%').replace('_', '\\_')
            params.append(f'%{literal}%')  # the query is text to find, never a pattern
        sql += ' ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?'
        params += [limit, offset]
        with self._read() as conn:
            rows = self._all(conn, sql, params)
        return [
            ConversationSummary(r[0], r[1], r[2], r[3], r[4], parse_time(r[5]), parse_time(r[6]), r[7], r[8])
            for r in rows
        ]

    def fork(self, conversation_id: str, *, scope: str, at: int | None = None, new_id: str | None = None) -> str:
        """A new conversation sharing the first `at` messages (all by default) without copying them."""

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
            self._touch(fork_id, ('head',))
        return fork_id

    def delete(self, conversation_id: str, *, scope: str) -> None:
        """Erase the conversation and everything recorded about it, in one transaction. Forks keep
        their shared prefix: it is copied into them first."""
        with self._write() as conn:
            conversation = self._conversation(conn, conversation_id, scope)
            own = [
                r[0] for r in self._all(conn, 'SELECT id FROM branches WHERE conversation_id = ?', (conversation_id,))
            ]
            self._materialize_children(conn, own)
            for table in _ERASED_WITH_CONVERSATION:
                self._exec(conn, f'DELETE FROM {table} WHERE conversation_id = ?', (conversation.id,))
            self._dialect.unindex(conn, conversation.id)
            self._exec(conn, 'DELETE FROM messages WHERE conversation_id = ?', (conversation.id,))
            self._exec(conn, 'DELETE FROM batches WHERE conversation_id = ?', (conversation.id,))
            self._exec(conn, 'DELETE FROM branches WHERE conversation_id = ?', (conversation.id,))
            self._exec(conn, 'DELETE FROM conversations WHERE id = ?', (conversation.id,))
            self._touch(conversation.id, ('head',))  # gone: its tip is forgotten after the commit

    def _materialize_children(self, conn: Connection, own: builtins.list[int]) -> None:
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
            fork_position = self._only(conn, 'SELECT fork_position FROM branches WHERE id = ?', (child,))[0]
            segments = self._lineage(conn, child)
            prefix = [s for s in segments if s.start < fork_position]
            scope = self._only(conn, 'SELECT scope FROM conversations WHERE id = ?', (child_conversation,))[0]
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
                copies = []
                for position, body, run_id in rows:
                    message = ModelMessagesTypeAdapter.validate_json(f'[{body}]'.encode())[0]
                    copies.append((child, position, child_conversation, run_id, body, message_text(message), scope))
                self._dialect.insert_messages(conn, copies)
                for start, end, provenance, run_id, prev_link, link, created in batches:
                    self._exec(
                        conn,
                        'INSERT INTO batches (conversation_id, branch_id, start, end_, provenance, run_id, '
                        'prev_link, link, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
                        (child_conversation, child, start, end, provenance, run_id, prev_link, link, created),
                    )
                    self._touch(child_conversation, ('batch', child, start))
            self._exec(conn, 'UPDATE branches SET parent_branch = NULL, fork_position = 0 WHERE id = ?', (child,))
            self._touch(child_conversation, ('branch', child))

    def scope_counts(self, scope: EveryScope) -> dict[str, int]:
        check_every_scope(scope)
        with self._read() as conn:
            rows = self._all(conn, 'SELECT scope, count(*) FROM conversations GROUP BY scope ORDER BY scope')
        return {str(name): int(count) for name, count in rows}

    def prune(
        self, *, older_than: datetime | None = None, keep_last: int | None = None, scope: str | EveryScope
    ) -> builtins.list[str]:
        """Delete conversations not updated since `older_than` and/or beyond the newest `keep_last`
        (per scope). `scope=EVERY_SCOPE` covers every scope (an operator action). Returns the deleted ids."""
        if older_than is None and keep_last is None:
            raise UserError('prune() needs older_than, keep_last, or both')
        if scope is not EVERY_SCOPE:
            check_scope(scope)
        with self._read() as conn:
            sql = 'SELECT id, scope, updated_at FROM conversations'
            params: builtins.list[Any] = []
            if isinstance(scope, str):
                sql += ' WHERE scope = ?'
                params.append(scope)
            rows = self._all(conn, sql + ' ORDER BY scope, updated_at DESC, id DESC', params)
        doomed: builtins.list[tuple[str, str]] = []
        rank: dict[str, int] = {}
        for conversation_id, conversation_scope, updated in rows:
            rank[conversation_scope] = rank.get(conversation_scope, 0) + 1
            too_old = older_than is not None and parse_time(updated) < older_than
            too_many = keep_last is not None and rank[conversation_scope] > keep_last
            if too_old or too_many:
                doomed.append((conversation_id, conversation_scope))
        for conversation_id, conversation_scope in doomed:
            try:
                self.delete(conversation_id, scope=conversation_scope)
            except ConversationNotFound:
                continue
        return [c for c, _ in doomed]

    def search(
        self,
        query: str,
        *,
        scope: str,
        conversation_id: str | None = None,
        limit: int = 10,
        include_dropped: bool = False,
    ) -> builtins.list[SearchHit]:
        """Ranked full-text matches of every term of `query` in `scope` (or one conversation)."""
        check_scope(scope)
        terms = parse_query(query)
        if not terms:
            return []
        with self._dialect.scan_read() as conn:
            allowed: builtins.list[Segment] | None = None
            conversations: builtins.list[str] | None = None
            if conversation_id is not None:
                conversation = self._conversation(conn, conversation_id, scope)
                heads = [conversation.head_branch]
                if include_dropped:
                    owned = 'SELECT id FROM branches WHERE conversation_id = ? ORDER BY id'
                    heads = [r[0] for r in self._all(conn, owned, (conversation_id,))]
                allowed = [s for head in heads for s in self._lineage(conn, head)]
                conversations = sorted({s.conversation_id for s in allowed})
            hits: builtins.list[SearchHit] = []
            fetch = limit if allowed is None else limit * 4
            while True:
                rows = self._dialect.search(conn, terms, scope, conversations, fetch)
                hits = []
                seen: set[int] = set()
                for rowid, branch, position, run_id, score, snippet in rows:
                    owner = conversation_id
                    if allowed is not None:
                        if rowid in seen or not any(
                            s.branch == branch and s.start <= position < s.end for s in allowed
                        ):
                            continue
                    else:
                        owner = self._owner(conn, branch)
                    seen.add(rowid)
                    hits.append(SearchHit(owner or '', position, score, snippet, run_id))
                if len(hits) >= limit or len(rows) < fetch:
                    return self._described(conn, hits[:limit], [r[0] for r in rows if r[0] in seen], terms)
                fetch *= 4

    def _described(
        self, conn: Connection, hits: builtins.list[SearchHit], rowids: builtins.list[int], terms: builtins.list[Term]
    ) -> builtins.list[SearchHit]:
        """`hits` with the role and time of the message each one is in, and a snippet made from
        that stored message (sealed), not from the index (which the seal does not cover)."""
        if not hits:
            return hits
        marks = ','.join('?' * len(rowids))
        rows = self._all(conn, f'SELECT id, body FROM messages WHERE id IN ({marks})', rowids)
        bodies: dict[int, str] = {rowid: body for rowid, body in rows}
        described = []
        for hit, rowid in zip(hits, rowids, strict=False):
            [message] = decode_messages(b'[' + bodies[rowid].encode() + b']')
            snippet, matches = snippet_of_text(message_text(message), terms)
            described.append(
                replace(hit, role=role_of(message), timestamp=time_of(message), snippet=snippet, matches=matches)
            )
        return described

    def _owner(self, conn: Connection, branch: int) -> str:
        row = self._one(conn, 'SELECT conversation_id FROM branches WHERE id = ?', (branch,))
        return str(row[0]) if row else ''

    def verify(self, conversation_id: str, *, scope: str) -> ChainCheck:
        """Re-hash the stored history against its chain (every whole batch's link, then the chain
        head), then check the keyed seal over every record of the conversation and its tip."""
        with self._read() as conn:
            conversation = self._conversation(conn, conversation_id, scope)
            segments = self._lineage(conn, conversation.head_branch)
            rows = self._raw_messages(conn, segments, 0, conversation.length)
            batches = self._batches(conn, segments)
            walk, problem = check_seals(self, conn, self._seal, self._location, conversation_id, scope, segments)
        recorded = {b.end: (b.start, b.link) for b in batches if b.complete}
        return report(rows, recorded, conversation.chain_head, walk, problem, self._seal.key_id)

    def lineage(self, conversation_id: str, *, scope: str) -> builtins.list[tuple[str, int, int]]:
        """Which conversation stored each stretch `[start, end)` of the history (a fork's shared
        prefix belongs to its parent)."""
        with self._read() as conn:
            conversation = self._conversation(conn, conversation_id, scope)
            return [(s.conversation_id, s.start, s.end) for s in self._lineage(conn, conversation.head_branch)]

    def branches(self, conversation_id: str, *, scope: str) -> builtins.list[tuple[int, int]]:
        """(branch id, length) of every branch of the conversation, oldest first; the head is the
        conversation's current history, the others are tips a `replace` left reachable."""
        with self._read() as conn:
            self._conversation(conn, conversation_id, scope)
            rows = self._all(
                conn, 'SELECT id, length FROM branches WHERE conversation_id = ? ORDER BY id', (conversation_id,)
            )
        return [(int(r[0]), int(r[1])) for r in rows]

    def raw_history(self, conversation_id: str, *, scope: str) -> bytes:
        """The stored history as one JSON document, exactly as stored (for export and audits)."""
        with self._read() as conn:
            conversation = self._conversation(conn, conversation_id, scope)
            rows = self._raw_messages(conn, self._lineage(conn, conversation.head_branch), 0, conversation.length)
        return ('[' + ','.join(body for _, body in rows) + ']').encode()
