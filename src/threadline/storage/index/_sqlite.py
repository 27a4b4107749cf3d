"""Full-text search over a SQLite store's FTS5 indexes (`message_fts`, and `message_grams` for
CJK text and symbols), for `SQLiteDialect.search`: which plan a query takes by how frequent its
terms are, and how hits are ranked and attached to their messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadline.storage.index._grams import gram_phrases
from threadline.storage.index._query import Term, fold
from threadline.storage.index._rank import MARK_END, MARK_START, rank_locally, snippet_of
from threadline.storage.sql._base import token
from threadline.storage.sql._dialect import Connection, Row, SearchRow, scalar

__all__ = ['search_fts']


def search_fts(
    conn: Connection, terms: list[Term], scope: str | None, conversations: list[str] | None, limit: int
) -> list[SearchRow]:
    words, grams = _split_terms(terms)
    if conversations:
        return _scoped(conn, words, grams, conversations, limit)
    if grams:
        return _gram_wide(conn, words, grams, scope, limit)
    counts = [_bounded_count(conn, _fts(t)) for t in words]
    if any(c > FREQUENT for t, c in zip(words, counts, strict=True) if t.kind == 'word'):
        return _newest_first(conn, words, scope, limit, counts)
    terms_match = ' AND '.join(_fts(t) for t in words)
    if len(words) > 1:
        ranked = _intersection_ranked(conn, words, terms_match, counts, scope, limit)
        if ranked is not None:
            return ranked
    # Store-wide: intersecting with a scope token is slow when the scope is large, so rank the
    # terms alone and keep the hits in scope, fetching more while too few are; a scope that
    # holds few of the hits is then found through its token instead.
    fetch = max(limit * 2, 20)
    while fetch <= 2000:
        rows, exhausted = _ranked_with_count(conn, terms_match, fetch, scope)
        if len(rows) >= limit or exhausted:
            return rows[:limit]
        fetch *= 4
    return _ranked(conn, f'{terms_match} AND stok : "{token("s", scope or "")}"', limit, scope=None)


def _scoped(
    conn: Connection, words: list[Term], grams: list[Term], conversations: list[str], limit: int
) -> list[SearchRow]:
    """Matches in `conversations` (a conversation and the ones it forked from), ranked by
    their own statistics (see `_local_rank`): every query here costs what those
    conversations hold, whatever the rest of the store holds."""
    within = 'ctok : (' + ' OR '.join(f'"{token("c", c)}"' for c in conversations) + ')'
    match = ' AND '.join([*(_fts(t) for t in words), within])
    highlighted = 'SELECT rowid, highlight(message_fts, 0, ?, ?) FROM message_fts WHERE message_fts MATCH ?'
    if grams:
        ids = _gram_rows(conn, grams, within)
        if not ids:
            return []
        marks = ','.join('?' * len(ids))
        if words:
            sql, params = f'{highlighted} AND rowid IN ({marks})', (MARK_START, MARK_END, match, *ids)
        else:  # nothing for highlight() to mark (rank_locally marks the grams): the text will do
            sql, params = f'SELECT rowid, body FROM message_fts WHERE rowid IN ({marks})', tuple(ids)
        hits = [h for h in conn.execute(sql, params).fetchall() if _holds(h[1], grams)]
    else:
        hits = conn.execute(highlighted, (MARK_START, MARK_END, match)).fetchall()
    if not hits:
        return []
    total = _count(conn, 'message_fts', within)
    every = [*words, *grams]
    df = [len(hits)] if len(every) == 1 else [_term_count(conn, t, within) for t in every]
    return _attach(conn, rank_locally(hits, every, total, df, limit), None)


def _intersection_ranked(
    conn: Connection, words: list[Term], match: str, df: list[int], scope: str | None, limit: int
) -> list[SearchRow] | None:
    """Several terms, none frequent: their few common matches ranked by BM25 here, with the
    document frequencies just counted. FTS5's `bm25()` would walk every term's full list a
    second time to count them. None when the intersection is too large to rank here."""
    hits = conn.execute(
        'SELECT rowid, highlight(message_fts, 0, ?, ?) FROM message_fts WHERE message_fts MATCH ? LIMIT ?',
        (MARK_START, MARK_END, match, INTERSECTION + 1),
    ).fetchall()
    if len(hits) > INTERSECTION:
        return None
    if not hits:
        return []
    rows = {row[0]: row for row in _attach(conn, [(h[0], 0.0, '') for h in hits], scope)}
    total = int(scalar(conn.execute('SELECT max(id) FROM messages')) or 1)
    ranked = rank_locally([h for h in hits if h[0] in rows], words, total, df, limit)
    return [(*rows[rowid][:4], score, snippet) for rowid, score, snippet in ranked]


def _newest_first(conn: Connection, words: list[Term], scope: str | None, limit: int, df: list[int]) -> list[SearchRow]:
    """A query with a frequent word (held by more than `FREQUENT` messages): FTS5's bm25 would
    count and score every one of them, which costs what the store holds, and a word in most
    messages says little about which one is wanted. So the scope's newest `WINDOW` matches are
    ranked by BM25 (store-wide N, document frequencies counted up to the cutoff)."""
    match = ' AND '.join([*(_fts(t) for t in words), f'stok : "{token("s", scope or "")}"'])
    hits = conn.execute(
        'SELECT rowid, highlight(message_fts, 0, ?, ?) FROM message_fts WHERE message_fts MATCH ? '
        'ORDER BY rowid DESC LIMIT ?',
        (MARK_START, MARK_END, match, WINDOW),
    ).fetchall()
    if not hits:
        return []
    total = int(scalar(conn.execute('SELECT max(id) FROM messages')) or 1)
    return _attach(conn, rank_locally(hits, words, total, df, limit), scope)


def _gram_wide(
    conn: Connection, words: list[Term], grams: list[Term], scope: str | None, limit: int
) -> list[SearchRow]:
    """Store-wide with CJK or symbol terms: ranked by the (small) gram index within the scope's
    token, then kept where the word terms match too. A gram term held by more than
    `FREQUENT` messages (`환불` in a Korean support desk) is answered as a frequent word is:
    the scope's newest `WINDOW` matches, ranked here (BM25 needs every match's statistics)."""
    match = ' AND '.join([*(_gram_fts(t) for t in grams), f'stok : "{token("s", scope or "")}"'])
    counts = [_bounded_count(conn, _gram_fts(t), table='message_grams') for t in grams]
    frequent = max(counts) > FREQUENT
    if frequent:
        ranked = conn.execute(
            'SELECT rowid, 0.0 FROM message_grams WHERE message_grams MATCH ? ORDER BY rowid DESC LIMIT ?',
            (match, WINDOW),
        ).fetchall()
    else:
        ranked = conn.execute(
            'SELECT rowid, -rank FROM message_grams WHERE message_grams MATCH ? ORDER BY rank LIMIT ?',
            (match, limit * 5),
        ).fetchall()
    if words and ranked:
        marks = ','.join('?' * len(ranked))
        keep = {
            r[0]
            for r in conn.execute(
                f'SELECT rowid FROM message_fts WHERE message_fts MATCH ? AND rowid IN ({marks})',
                (' AND '.join(_fts(t) for t in words), *(r[0] for r in ranked)),
            )
        }
        ranked = [r for r in ranked if r[0] in keep]
    if not ranked:
        return []
    marks = ','.join('?' * len(ranked))
    rows = conn.execute(f'SELECT rowid, body FROM message_fts WHERE rowid IN ({marks})', [r[0] for r in ranked])
    texts: dict[int, str] = {rowid: body for rowid, body in rows}
    ranked = [r for r in ranked if _holds(texts[r[0]], grams)]
    if frequent:
        total = int(scalar(conn.execute('SELECT max(id) FROM messages')) or 1)
        hits = rank_locally([(rowid, texts[rowid]) for rowid, _ in ranked], grams, total, counts, limit)
    else:
        hits = [(rowid, score, snippet_of(texts[rowid], grams)) for rowid, score in ranked[:limit]]
    return _attach(conn, hits, scope)


def _ranked_with_count(conn: Connection, match: str, fetch: int, scope: str | None) -> tuple[list[SearchRow], bool]:
    hits = conn.execute(
        "SELECT rowid, -rank, snippet(message_fts, 0, '[', ']', '...', 12) FROM message_fts "
        'WHERE message_fts MATCH ? ORDER BY rank LIMIT ?',
        (match, fetch),
    ).fetchall()
    return _attach(conn, hits, scope), len(hits) < fetch


def _ranked(conn: Connection, match: str, limit: int, scope: str | None) -> list[SearchRow]:
    hits = conn.execute(
        "SELECT rowid, -rank, snippet(message_fts, 0, '[', ']', '...', 12) FROM message_fts "
        'WHERE message_fts MATCH ? ORDER BY rank LIMIT ?',
        (match, limit),
    ).fetchall()
    return _attach(conn, hits, scope)


def _attach(conn: Connection, hits: Sequence[Row], scope: str | None) -> list[SearchRow]:
    """Join FTS hits (in rank order) with their message rows, keeping those in `scope`."""
    if not hits:
        return []
    marks = ','.join('?' * len(hits))
    sql = (
        f'SELECT m.id, m.branch_id, m.position, m.run_id FROM messages m JOIN conversations c '
        f'ON c.id = m.conversation_id WHERE m.id IN ({marks})'
    )
    params: list[Any] = [h[0] for h in hits]
    if scope is not None:
        sql += ' AND c.scope = ?'
        params.append(scope)
    rows = {r[0]: r for r in conn.execute(sql, params).fetchall()}
    return [(h[0], rows[h[0]][1], rows[h[0]][2], rows[h[0]][3], h[1], h[2]) for h in hits if h[0] in rows]


FREQUENT = 10_000
"""A word held by more messages than this is ranked within the newest matches (`_newest_first`)."""
WINDOW = 200
INTERSECTION = 500
"""Up to this many common matches of several terms are ranked here (`_intersection_ranked`)."""


def _bounded_count(conn: Connection, expression: str, table: str = 'message_fts') -> int:
    """How many messages match, counted no further than `FREQUENT + 1` (the cost is bounded)."""
    sql = f'SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT ?)'
    return int(scalar(conn.execute(sql, (expression, FREQUENT + 1))))


def _split_terms(terms: list[Term]) -> tuple[list[Term], list[Term]]:
    """Word terms for the word index, and gram terms (CJK, symbols) for the gram index. A gram
    term's other characters (`ipad` in `ipad용`) are checked in the text itself (`_holds`):
    `unicode61` keeps `ipad용` as one word, so the word index cannot answer for `ipad`."""
    return [t for t in terms if not t.grams], [t for t in terms if t.grams]


def _holds(text: str, grams: list[Term]) -> bool:
    """Whether the (possibly highlighted) text holds every gram term as written, case-folded."""
    plain = fold(text.replace(MARK_START, '').replace(MARK_END, ''))
    return all(term.text in plain for term in grams)


def _gram_fts(term: Term) -> str:
    """A gram term as an FTS5 expression on the gram column: each run's tokens in a row."""
    phrases = [phrase for word in term.words for phrase in gram_phrases(word)]
    return ' AND '.join(f'grams : "{" ".join(tokens)}"' for tokens in phrases)


def _gram_rows(conn: Connection, grams: list[Term], within: str) -> list[int]:
    match = ' AND '.join([*(_gram_fts(t) for t in grams), within])
    return [r[0] for r in conn.execute('SELECT rowid FROM message_grams WHERE message_grams MATCH ?', (match,))]


def _count(conn: Connection, table: str, match: str) -> int:
    return int(scalar(conn.execute(f'SELECT count(*) FROM {table} WHERE {table} MATCH ?', (match,))))


def _term_count(conn: Connection, term: Term, within: str) -> int:
    if term.grams:
        return len(_gram_rows(conn, [term], within))
    return _count(conn, 'message_fts', f'{_fts(term)} AND {within}')


def _fts(term: Term) -> str:
    """One term as an FTS5 expression on the body column. A term holds only word characters and
    spaces (see `_query`), so quoting it cannot reach FTS5's syntax."""
    expression = f'body : "{term.text}"'
    return expression + ' *' if term.kind == 'prefix' else expression
