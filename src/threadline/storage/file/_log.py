"""The conversation log's operations on JSON-lines files (see `file.py`)."""

from __future__ import annotations

import builtins
import copy
import os
import re
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from threadline._uuid import uuid7
from threadline.exceptions import BackendError, ConversationNotFound, SearchQueryTooLarge, UserError
from threadline.messages import ModelMessage
from threadline.messages.wire import encode_each
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
    shared_prefix,
)
from threadline.storage._records import (
    EVERY_SCOPE,
    BatchInfo,
    ChainCheck,
    ConversationSummary,
    EveryScope,
    Provenance,
    RunStart,
    SearchHit,
    StoredConversation,
    ToolEffect,
)
from threadline.storage._verify import report
from threadline.storage.file._convert import result_line, to_effect
from threadline.storage.file._io import FileBase
from threadline.storage.file._records import (
    REV,
    BranchLine,
    CreateLine,
    FileRecord,
    HeadLine,
    MaterializeLine,
    file_key,
)
from threadline.storage.file._seal import check as check_seals
from threadline.storage.file._state import ConvState, replay
from threadline.storage.index._query import SEARCH_BUDGET, Term, fold, parse_query
from threadline.storage.index._rank import snippet_of_text
from threadline.storage.index._text import message_text, role_of, time_of
from threadline.trust.sealing import GENESIS, extend_chain

__all__ = ['FileLogOps']


class FileLogOps(FileBase):
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
        check_append(messages, provenance)
        with self._locked(conversation_id) as path:
            state, records = self._open(path, conversation_id, scope, expected_revision, create=True)
            if messages:
                records.append(
                    self._batch(state, state.head, self._length(state), messages, provenance, run_id, state.chain_head)
                )
            self._append_lines(path, [*records, REV])
            return state.revision + 1

    def save(
        self,
        result: FinishedRun,
        *,
        scope: str,
        conversation_id: str | None = None,
        expected_revision: int | None = None,
        branch_at: int | None = None,
    ) -> int:
        run_id, conversation_id = finished_ids(result, conversation_id)
        new = list(result.new_messages())
        check_messages(new, 'result.new_messages()')
        check_branch_at(branch_at, expected_revision)
        with self._locked(conversation_id) as path:
            state, records = self._open(path, conversation_id, scope, expected_revision, create=branch_at is None)
            self._claim_run(run_id, conversation_id)
            stored = sum(b.end - b.start for b in state.batches if b.run_id == run_id and b.branch in state.branches)
            length = self._length(state) if state.branches else 0
            if branch_at is not None and branch_at != length:
                check_branch_position(branch_at, length, stored, conversation_id)
                check_continuation(result, len(new), branch_at, 0, conversation_id)
                records += self._branch_records(state, branch_at, new, 'server', run_id)
                self._append_lines(path, [*records, result_line(result, add_usage=True), REV])
                return state.revision + 1
            check_continuation(result, len(new), length, stored, conversation_id)
            run = state.runs.get(run_id)
            counted = run is not None and run.status == 'completed'
            fresh = new[stored:]
            if not fresh and counted:
                return state.revision
            if fresh:
                records.append(
                    self._batch(state, state.head, self._length(state), fresh, 'server', run_id, state.chain_head)
                )
            records.append(result_line(result, add_usage=not counted))
            self._append_lines(path, [*records, REV])
            return state.revision + 1

    def replace(
        self,
        conversation_id: str,
        messages: Sequence[ModelMessage],
        *,
        scope: str,
        expected_revision: int,
        provenance: Provenance = 'server',
        run_id: str | None = None,
    ) -> int:
        check_messages(messages, 'messages')
        if expected_revision is None:
            raise UserError('replace() needs expected_revision: a rewrite must say which revision it rewrites')
        with self._locked(conversation_id) as path:
            state, records = self._open(path, conversation_id, scope, expected_revision, create=False)
            records += self._replace_records(state, list(messages), provenance, run_id)
            if not records:
                return state.revision
            self._append_lines(path, [*records, REV])
            return state.revision + 1

    def _replace_records(
        self, state: ConvState, messages: builtins.list[ModelMessage], provenance: Provenance, run_id: str | None
    ) -> builtins.list[FileRecord]:
        old = self._bodies(state, 0, self._length(state))
        shared = shared_prefix([body for _, body in old], encode_each(messages))
        if shared == len(old) == len(messages):
            return []
        return self._branch_records(state, shared, messages[shared:], provenance, run_id)

    def _branch_records(
        self, state: ConvState, at: int, tail: builtins.list[ModelMessage], provenance: Provenance, run_id: str | None
    ) -> builtins.list[FileRecord]:
        """A new head branch holding the first `at` messages of the head's history, then `tail`."""
        branch = max(state.branches) + 1
        prev = extend_chain(GENESIS, [b.encode() for _, b in self._bodies(state, 0, at)])
        records: builtins.list[FileRecord] = [BranchLine(id=branch, parent=state.head, fork_position=at)]
        if tail:
            records.append(self._batch(state, branch, at, tail, provenance, run_id, prev))
        else:
            records.append(HeadLine(link=prev))
        return records

    def load(self, conversation_id: str, *, scope: str, last: int | None = None) -> StoredConversation:
        with self._lock:
            state = self._get(conversation_id, scope)
            rows = self._bodies(state)
        messages = self._decode(rows, conversation_id)
        raw = ('[' + ','.join(b for _, b in rows) + ']').encode()
        cut = 0 if last is None else (safe_start(messages, len(messages) - min(last, len(messages))) or 0)
        batches = [b for b in self._lineage_batches(state) if b.end > cut]
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

    def _lineage_batches(self, state: ConvState) -> builtins.list[BatchInfo]:
        out = []
        for branch, lo, hi in self._segments(state):
            owner = state if branch.owner == state.id else self._get(branch.owner, state.scope)
            for batch in sorted(owner.batches, key=lambda b: b.start):
                if batch.branch == branch.id and batch.start < hi and batch.end > lo:
                    complete = batch.start >= lo and batch.end <= hi
                    start, end = max(batch.start, lo), min(batch.end, hi)
                    at = parse_time(batch.at)
                    out.append(BatchInfo(start, end, batch.provenance, batch.run_id, batch.link, at, complete))
        return out

    def list(
        self, scope: str, *, limit: int = 50, offset: int = 0, query: str | None = None
    ) -> builtins.list[ConversationSummary]:
        check_scope(scope)
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

    def scope_counts(self, scope: EveryScope) -> dict[str, int]:
        check_every_scope(scope)
        counts: dict[str, int] = {}
        for state in self._all_states():
            counts[state.scope] = counts.get(state.scope, 0) + 1
        return dict(sorted(counts.items()))

    def _all_states(self) -> builtins.list[ConvState]:
        out = []
        for path in (self.root / 'conversations').glob('*.jsonl'):
            records = self._read_lines(path, path.stem)
            if records and isinstance(records[0], CreateLine):
                out.append(replay(records))
        return out

    def fork(self, conversation_id: str, *, scope: str, at: int | None = None, new_id: str | None = None) -> str:
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
                        CreateLine(
                            id=fork_id,
                            scope=scope,
                            at=now_text(),
                            forked_from=conversation_id,
                            forked_at=position,
                            parent_branch=(conversation_id, source.head),
                            link=link,
                            title=source.title,
                            usage=source.usage if position == length else None,
                        )
                    ],
                )
        return fork_id

    def delete(self, conversation_id: str, *, scope: str) -> None:
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
                (self.root / 'runs' / file_key(run_id)).unlink(missing_ok=True)
            self.seal.forget(self._location, conversation_id)

    def _materialize(self, child: ConvState) -> None:
        """Copy the prefix a fork shares with a conversation about to be deleted into the fork."""
        with self._locked(child.id) as path:
            prefix = self._bodies(child, 0, child.forked_at or 0)
            root = min(child.branches)
            self._append_lines(path, [MaterializeLine(branch=root, bodies=[b for _, b in prefix])])

    def prune(
        self, *, older_than: datetime | None = None, keep_last: int | None = None, scope: str | EveryScope
    ) -> builtins.list[str]:
        if older_than is None and keep_last is None:
            raise UserError('prune() needs older_than, keep_last, or both')
        if scope is not EVERY_SCOPE:
            check_scope(scope)
        states = sorted(
            (s for s in self._all_states() if scope is EVERY_SCOPE or s.scope == scope),
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
            self.delete(state.id, scope=state.scope)
        return [s.id for s in doomed]

    def search(
        self,
        query: str,
        *,
        scope: str,
        conversation_id: str | None = None,
        limit: int = 10,
        include_dropped: bool = False,
    ) -> builtins.list[SearchHit]:
        """A scan: every message of the scope (or the conversation) is matched in Python, ranked by
        matched instances over length. Fine for the sizes a directory of files is for; a scan
        past `SEARCH_BUDGET` seconds stops with `SearchQueryTooLarge`."""
        check_scope(scope)
        terms = parse_query(query)
        if not terms:
            return []
        deadline = time.monotonic() + SEARCH_BUDGET
        states = (
            [self._get(conversation_id, scope)]
            if conversation_id
            else [s for s in self._all_states() if s.scope == scope]
        )
        hits = []
        for state in states:
            every = include_dropped or not conversation_id
            rows = (
                [(p, b) for br in state.branches.values() for p, b in br.messages.items()]
                if every
                else self._bodies(state)
            )
            if time.monotonic() > deadline:
                raise SearchQueryTooLarge(f'the search ran past its {SEARCH_BUDGET:g} s budget; narrow it')
            for position, body in dict.fromkeys(rows):
                hit = self._match(state.id, position, body, terms)
                if hit is not None:
                    hits.append(hit)
        hits.sort(key=lambda h: (-h.score, h.conversation_id, h.position))
        return hits[:limit]

    def _match(self, conversation_id: str, position: int, body: Any, terms: builtins.list[Term]) -> SearchHit | None:
        message = self._decode([(position, body)], conversation_id)[0]
        text = message_text(message)
        words = [fold(w) for w in _WORDS.findall(text)]
        folded = fold(text)
        counts = [folded.count(term.text) if term.grams else _count(term, words) for term in terms]
        if not all(counts):
            return None
        snippet, matches = snippet_of_text(text, terms)  # marked as the SQL stores mark it
        timestamp = time_of(message)
        score = sum(counts) / (1 + len(words) / 50)
        return SearchHit(
            conversation_id, position, score, snippet, message.run_id, role_of(message), timestamp, matches
        )

    def verify(self, conversation_id: str, *, scope: str) -> ChainCheck:
        """Re-hash the stored history against every whole batch's link and the chain head, then
        walk the keyed seals over the conversation file's bytes and compare with its tip."""
        with self._locked(conversation_id) as path:
            state = self._get(conversation_id, scope)
            rows = self._bodies(state, gaps=True)
            batches = self._lineage_batches(state)
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise BackendError(f'cannot read {path.name}: {exc}') from None
        walk, problem = check_seals(self.seal, self._location, data, conversation_id, scope)
        recorded = {b.end: (b.start, b.link) for b in batches if b.complete}
        return report(rows, recorded, state.chain_head, walk, problem, self.seal.key_id)

    def raw_history(self, conversation_id: str, *, scope: str) -> bytes:
        state = self._get(conversation_id, scope)
        return ('[' + ','.join(b for _, b in self._bodies(state)) + ']').encode()

    def lineage(self, conversation_id: str, *, scope: str) -> builtins.list[tuple[str, int, int]]:
        state = self._get(conversation_id, scope)
        return [(branch.owner, lo, hi) for branch, lo, hi in self._segments(state)]

    def tool_effects_for_conversation(
        self, conversation_id: str, *, scope: str, status: str | None = None
    ) -> builtins.list[ToolEffect]:
        effects = self._get(conversation_id, scope).effects.values()
        return [to_effect(e) for e in effects if status is None or e.status == status]

    def run_start(self, conversation_id: str, *, scope: str) -> RunStart | None:
        with self._lock:
            try:
                state = self._get(conversation_id, scope)
            except ConversationNotFound:
                return None
            length = self._length(state)
            tip = self._bodies(state, length - 1) if length else []  # the last message alone
            unresolved = [to_effect(e) for e in state.effects.values() if e.status == 'started']
        return RunStart(
            state.revision,
            length,
            self._decode(tip, conversation_id)[0] if tip else None,
            sorted(unresolved, key=lambda e: e.started_at),
            state.quarantine,
        )

    def branches(self, conversation_id: str, *, scope: str) -> builtins.list[tuple[int, int]]:
        state = self._get(conversation_id, scope)
        return [(b.id, b.length) for b in sorted(state.branches.values(), key=lambda b: b.id)]


_WORDS = re.compile(r'[^\W_]+')


def _count(term: Term, words: builtins.list[str]) -> int:
    """Instances of `term` among a message's folded words (split as `unicode61` splits them): a
    word equal to it, a word starting with a prefix, a phrase's words in a row."""
    if term.kind == 'prefix':
        return sum(1 for w in words if w.startswith(term.text))
    wanted = term.words
    size = len(wanted)
    return sum(1 for i in range(len(words) - size + 1) if words[i : i + size] == wanted)
