"""BM25 over one conversation's own statistics, for searches scoped to a conversation.

SQLite FTS5's `bm25()` counts, for every query term, the rows that hold it in the *whole* index
before it ranks anything: a scoped search for a frequent word then costs what the store holds,
not what the conversation holds, and its scores carry every tenant's term frequencies. A scoped
search instead fetches the conversation's matches unranked (their cost is the conversation's)
with FTS5's `highlight()`, and ranks them here:

- `N` is the number of the conversation's indexed messages, `df` of a term the number of them
  that hold it (each counted by FTS5 within the conversation);
- `tf` is the number of highlighted spans that are an instance of the term (a word, a phrase, a
  word with the term's prefix; compared case- and accent-folded, as `unicode61` folds them); for
  a gram term (CJK, emoji), the number of times its first word occurs in the folded text;
- a message's length is its count of whitespace-separated words; the average length is taken over the matching messages
  (counting every message of the conversation would cost a read of all of them);
- `k1 = 1.2`, `b = 0.75`, and `idf = ln(1 + (N - df + 0.5) / (df + 0.5))`, as FTS5's bm25 uses.

Ties keep the store's order (oldest first). The snippet is a window of the message's words
around its first match, matches marked `[...]` as FTS5's `snippet()` marks them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from threadline.storage.index._query import Term, fold

__all__ = ['MARK_END', 'MARK_START', 'mark_grams', 'rank_locally', 'snippet_of', 'snippet_of_text']

MARK_START, MARK_END = '\x01', '\x02'
"""The markers `highlight()` is asked to put around each match."""

_K1, _B = 1.2, 0.75
_SPAN = re.compile(f'{MARK_START}(.*?){MARK_END}', re.DOTALL)
_SNIPPET_WORDS = 12
_SNIPPET_CHARS = 120


def rank_locally(
    hits: Sequence[tuple[int, str]], terms: Sequence[Term], total: int, df: Sequence[int], limit: int
) -> list[tuple[int, float, str]]:
    """The best `limit` of `hits` (rowid, highlighted text) as (rowid, score, snippet)."""
    idf = [math.log(1 + (total - d + 0.5) / (d + 0.5)) for d in df]
    lengths = [len(text.split()) for _, text in hits]
    average = (sum(lengths) / len(lengths)) if lengths else 1.0
    with_grams = any(term.grams for term in terms)
    scored: list[tuple[float, int, int]] = []
    for index, ((_, text), length) in enumerate(zip(hits, lengths, strict=True)):
        spans = [fold(s) for s in _SPAN.findall(text)] if MARK_START in text else []
        # A gram term is counted in the folded text: the index's marks cannot see it (see
        # `mark_grams`), and marking every hit only to count would cost more than the ranking.
        folded = fold(text.replace(MARK_START, '').replace(MARK_END, '')) if with_grams else ''
        norm = _K1 * (1 - _B + _B * length / (average or 1.0))
        score = 0.0
        for term, weight in zip(terms, idf, strict=True):
            tf = folded.count(term.words[0]) if term.grams else sum(1 for s in spans if term.matches(s))
            tf = tf or 1  # a match the index reported counts at least once
            score += weight * tf * (_K1 + 1) / (tf + norm)
        scored.append((-score, index, hits[index][0]))
    scored.sort()
    return [
        (rowid, -negative, _snippet(mark_grams(hits[index][1], terms))[0]) for negative, index, rowid in scored[:limit]
    ]


def mark_grams(text: str, terms: Sequence[Term]) -> str:
    """`text` with every instance of a gram term's words (CJK, emoji) marked: the word index's
    `highlight()` cannot see them inside longer words."""
    words = [w for t in terms if t.grams for w in t.words]
    if not words:
        return text
    pattern = re.compile('|'.join(re.escape(w) for w in sorted(words, key=len, reverse=True)), re.IGNORECASE)
    return pattern.sub(lambda m: MARK_START + m.group(0) + MARK_END, text)


def snippet_of(text: str, terms: Sequence[Term]) -> str:
    """A snippet of an unmarked `text` with the gram terms marked (the word terms are the index's)."""
    return _snippet(mark_grams(text, terms))[0]


_WORD_SPANS = re.compile(r'[^\W_]+')


def snippet_of_text(text: str, terms: Sequence[Term]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """A snippet of a message's own text with every term marked, and where the marked matches
    are in it (`snippet[start:end]`, the brackets left out, so a real `[` in the text is never
    taken for a mark): what a hit shows is read from the stored (sealed) message, never from the
    search index's copy of its text."""
    return _snippet(mark_grams(_mark_words(text, terms), terms))


def _mark_words(text: str, terms: Sequence[Term]) -> str:
    """`text` with each instance of a word, prefix or phrase term marked (folded as the index folds)."""
    plain = [t for t in terms if not t.grams]
    if not plain:
        return text
    spans = [(m.start(), m.end(), fold(m.group(0))) for m in _WORD_SPANS.finditer(text)]
    marked: list[tuple[int, int]] = []
    for index in range(len(spans)):
        for term in plain:
            words = term.words
            window = spans[index : index + len(words)]
            if len(window) < len(words):
                continue
            folded = ' '.join(w for _, _, w in window)
            if term.matches(folded) if term.kind != 'prefix' else window[0][2].startswith(term.text):
                marked.append((window[0][0], window[-1][1]))
                break
    out, at = [], 0
    for start, end in marked:
        if start < at:
            continue
        out += [text[at:start], MARK_START, text[start:end], MARK_END]
        at = end
    return ''.join([*out, text[at:]])


def _snippet(text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """About twelve words around the first match, `[match]` marked, `...` where text was cut.
    Text written without spaces (Chinese, Japanese) has few words to cut by, so a window of
    words longer than `_SNIPPET_CHARS` is cut by characters instead."""
    words = text.split()
    first = next((i for i, w in enumerate(words) if MARK_START in w), 0)
    start = max(0, min(first - 3, len(words) - _SNIPPET_WORDS))
    window = ' '.join(words[start : start + _SNIPPET_WORDS])
    if len(window) > _SNIPPET_CHARS:
        return _character_snippet(' '.join(words))
    return _marked(window, start > 0, start + _SNIPPET_WORDS < len(words))


def _character_snippet(text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    at = max(text.find(MARK_START), 0)
    start = max(0, min(at - _SNIPPET_CHARS // 4, len(text) - _SNIPPET_CHARS))
    end = start + _SNIPPET_CHARS
    return _marked(text[start:end], start > 0, end < len(text))


def _marked(window: str, cut_before: bool, cut_after: bool) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The window with its marks as `[` `]`, and the spans of the marked text in the result."""
    out, spans = ['...'] if cut_before else [], []
    length, start = len(out[0]) if out else 0, None
    for char in window:
        if char == MARK_START:
            out.append('[')
            length += 1
            start = length
        elif char == MARK_END:
            if start is not None:
                spans.append((start, length))
            out.append(']')
            length += 1
            start = None
        else:
            out.append(char)
            length += 1
    if start is not None:  # a match cut by the window's end
        spans.append((start, length))
        out.append(']')
    if cut_after:
        out.append('...')
    return ''.join(out), tuple(spans)
