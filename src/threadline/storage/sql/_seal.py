"""Sealing a SQL store's writes, and checking the seals (see `_seal` for what the seal is).

A write marks the records it touched (`SQLBase._touch`); before it commits, each touched
conversation gets one seal row listing those records and the digest of their sealed columns, read
back from the rows just written. `check` walks the seals, then compares the newest sealed digest
of every record with what the tables hold now, and re-hashes each batch's messages against its
sealed chain links.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from threadline.storage._neutral import now_text
from threadline.storage.sql._dialect import Connection
from threadline.trust.sealing import GENESIS_TAG, Link, Problem, StoreSeal, Tip, Walk, extend_chain, fact_digest

if TYPE_CHECKING:
    from threadline.storage.sql._base import Segment, SQLBase

__all__ = ['Ident', 'all_idents', 'check', 'describe', 'seal_touched']

Ident = tuple[Any, ...]
"""A record's identity: its kind, then its key columns (`('batch', branch_id, start)`)."""


@dataclass(frozen=True)
class _Kind:
    table: str
    owner: str
    keys: tuple[str, ...]
    values: tuple[str, ...]
    where: str = ''
    """Which of the table's rows are sealed (all, when empty)."""


_KINDS: dict[str, _Kind] = {
    'head': _Kind(
        'conversations', 'id', (), ('head_branch', 'chain_head', 'quarantine', 'forked_from', 'forked_at', 'created_at')
    ),
    'branch': _Kind('branches', 'conversation_id', ('id',), ('parent_branch', 'fork_position', 'length')),
    'batch': _Kind(
        'batches', 'conversation_id', ('branch_id', 'start'), ('end_', 'provenance', 'run_id', 'prev_link', 'link')
    ),
    'effect': _Kind(
        'tool_effects',
        'conversation_id',
        ('run_id', 'tool_call_id'),
        ('tool_name', 'status', 'started_at', 'ended_at', 'idempotency_key', 'summary'),
    ),
    'receipt': _Kind(
        'outcome_receipts',
        'conversation_id',
        ('id',),
        (
            'run_id',
            'expected_effect',
            'destination',
            'idempotency_key',
            'observed_revision',
            'evidence_ref',
            'strength',
            'observed_at',
        ),
    ),
    'wait': _Kind(
        'wait_records',
        'conversation_id',
        ('id',),
        ('run_id', 'owner', 'decision', 'deadline', 'resume_token', 'created_at', 'resolved_at'),
    ),
    # A snapshot is a position, except for the messages it holds that the log does not (yet).
    'snapshot': _Kind(
        'snapshots',
        'conversation_id',
        ('id',),
        ('run_id', 'branch_id', 'position', 'state', 'step_index', 'pending'),
        where='pending IS NOT NULL',
    ),
}


def describe(ident: Ident) -> str:
    """A record's name in a report."""
    match ident:
        case ('branch', branch):
            return f'branch {branch}'
        case ('batch', branch, start):
            return f'the batch at position {start} of branch {branch}'
        case ('effect', run_id, call_id):
            return f'the ledger entry for call {call_id!r} of run {run_id!r}'
        case ('receipt', number):
            return f'outcome receipt {number}'
        case ('wait', number):
            return f'wait record {number}'
        case ('snapshot', number):
            return f'snapshot {number} (the messages it holds outside the log)'
        case _:
            return 'the conversation row (head branch, chain head, quarantine)'


def _read(db: SQLBase, conn: Connection, conversation_id: str, ident: Ident) -> str | None:
    kind = _KINDS[ident[0]]
    where = ' AND '.join([f'{kind.owner} = ?', *(f'{k} = ?' for k in kind.keys)])
    row = db._one(
        conn, f'SELECT {", ".join(kind.values)} FROM {kind.table} WHERE {where}', (conversation_id, *ident[1:])
    )
    return None if row is None else fact_digest(list(row))


def current_facts(db: SQLBase, conn: Connection, conversation_id: str) -> dict[Ident, str]:
    """Every sealed kind of record the conversation has now, with its digest."""
    out: dict[Ident, str] = {}
    for name, kind in _KINDS.items():
        columns = ', '.join([*kind.keys, *kind.values]) if kind.keys else ', '.join(kind.values)
        where = f' AND {kind.where}' if kind.where else ''
        sql = f'SELECT {columns} FROM {kind.table} WHERE {kind.owner} = ?{where}'
        for row in db._all(conn, sql, (conversation_id,)):
            out[(name, *row[: len(kind.keys)])] = fact_digest(list(row[len(kind.keys) :]))
    return out


def all_idents(db: SQLBase, conn: Connection, conversation_id: str) -> list[Ident]:
    return sorted(current_facts(db, conn, conversation_id), key=_order)


def seal_touched(
    db: SQLBase, conn: Connection, seal: StoreSeal, touched: dict[str, list[Ident]], adopted: bool = False
) -> list[tuple[str, Tip | None]]:
    """Write one seal per touched conversation (before the commit); the tips to record after it
    (None: the conversation is gone, forget its tip)."""
    tips: list[tuple[str, Tip | None]] = []
    head = _KINDS['head']
    for conversation_id, idents in touched.items():
        # The conversation row gives the scope (None: it was deleted) and the head's sealed columns.
        row = db._one(
            conn, f'SELECT scope, {", ".join(head.values)} FROM conversations WHERE id = ?', (conversation_id,)
        )
        if row is None:
            tips.append((conversation_id, None))
            continue
        head_digest = fact_digest(list(row[1:]))
        facts: dict[str, Any] = {
            'f': [
                [list(i), head_digest if i == ('head',) else _read(db, conn, conversation_id, i)]
                for i in dict.fromkeys(idents)
            ],
        }
        if adopted:
            facts['adopted'] = now_text()
        text = json.dumps(facts, separators=(',', ':'))
        last = db._one(
            conn,
            'SELECT seq, tag, (SELECT tag FROM seals WHERE conversation_id = ? AND seq = 0) FROM seals '
            'WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1',
            (conversation_id, conversation_id),
        )
        seq, prev, genesis = (0, GENESIS_TAG, None) if last is None else (int(last[0]) + 1, last[1], last[2])
        key_id, tag = seal.tag(prev, conversation_id, row[0], seq, _digest(text))
        db._exec(
            conn,
            'INSERT INTO seals (conversation_id, seq, facts, key_id, tag) VALUES (?, ?, ?, ?, ?)',
            (conversation_id, seq, text, key_id, tag),
        )
        tips.append((conversation_id, Tip(genesis or tag, seq, tag)))
    return tips


def check(
    db: SQLBase,
    conn: Connection,
    seal: StoreSeal,
    location: str | None,
    conversation_id: str,
    scope: str,
    lineage: Sequence[Segment],
) -> tuple[Walk, Problem | None]:
    """Walk the seals and compare every record with its newest seal: (walk, first problem).

    Batches lying whole inside `lineage` are not re-hashed here: `verify()` re-hashes the
    lineage's messages against those same (sealed) links, so hashing them twice proves nothing more."""
    if not db._sealed_schema:
        why = 'the database predates seals: open it for writing once with this version to seal it'
        return Walk(None, (), ()), Problem('seals', 'no_seals', why)
    rows = db._all(
        conn, 'SELECT seq, facts, key_id, tag FROM seals WHERE conversation_id = ? ORDER BY seq', (conversation_id,)
    )
    links = (Link(int(seq), key_id, tag, _digest(facts), f'seal {seq}') for seq, facts, key_id, tag in rows)
    walk, problem = seal.check(location, conversation_id, scope, links)
    if problem is not None:
        return walk, problem
    expected: dict[Ident, str | None] = {}
    for _, facts, _, _ in rows:
        for ident, digest in json.loads(facts)['f']:
            expected[tuple(ident)] = digest
    return walk, _compare(expected, current_facts(db, conn, conversation_id)) or _batch_bodies(
        db, conn, conversation_id, lineage
    )


def _compare(expected: dict[Ident, str | None], current: dict[Ident, str]) -> Problem | None:
    for ident in sorted(set(expected) | set(current), key=_order):
        want, have = expected.get(ident), current.get(ident)
        if want == have:
            continue
        if ident not in expected:
            return Problem(describe(ident), 'record_unsealed', 'it has no seal: it was not written through the store')
        if have is None:
            return Problem(describe(ident), 'record_removed', 'it was sealed, then removed')
        return Problem(describe(ident), 'record_changed', 'it changed since it was sealed')
    return None


def _batch_bodies(db: SQLBase, conn: Connection, conversation_id: str, lineage: Sequence[Segment]) -> Problem | None:
    """Re-hash each batch's stored messages from its sealed previous link to its sealed link
    (those of old branches and copies; the current lineage's are re-hashed by `verify()`)."""
    batches = db._all(
        conn,
        'SELECT branch_id, start, end_, prev_link, link FROM batches WHERE conversation_id = ? ORDER BY branch_id, start',
        (conversation_id,),
    )
    for index, (branch, start, end, prev_link, link) in enumerate(batches):
        following = batches[index + 1] if index + 1 < len(batches) else None
        if following is not None and following[0] == branch and following[1] < end:
            continue  # copied whole from a fork parent but only partly kept: the lineage check covers it
        if any(seg.branch == branch and seg.start <= start and end <= seg.end for seg in lineage):
            continue
        bodies = [
            r[0]
            for r in db._all(
                conn,
                'SELECT body FROM messages WHERE branch_id = ? AND position >= ? AND position < ? ORDER BY position',
                (branch, start, end),
            )
        ]
        if len(bodies) != end - start or _rehash(prev_link, bodies) != link:
            return Problem(
                describe(('batch', branch, start)), 'message_changed', 'a message of it changed or is missing'
            )
    return None


def _rehash(prev_link: str, bodies: Iterable[str]) -> str | None:
    try:
        return extend_chain(prev_link, (b.encode() for b in bodies))
    except ValueError:  # not JSON, or not a link
        return None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _order(ident: Ident) -> str:
    return json.dumps(list(ident))
