"""The search query syntax every store reads, and nothing else: a query is never raw FTS syntax.

- `refund order`: messages holding every word (case and accents ignored);
- `"order 42"`: the words next to each other, in that order (a phrase);
- `refun*`: words starting with `refun` (a prefix of at least two characters);
- `order_id`, `e-mail`: a token the index splits into several words is those words in a row;
- everything else, operators included (`AND`, `OR`, `NOT`, `NEAR`, `-`, `:`, `(`, `^`), is
  treated as words or as separators between them, so no query can reach the engine's own
  syntax.

Bounds, so that no query costs more than an ordinary one (each a `SearchQueryTooLarge` naming
the bound, never a silent cut): a repeated term counts once; at most `MAX_TERMS` terms,
`MAX_PHRASE_WORDS` words in one phrase, `MAX_GRAM_CHARS` gram characters (CJK, emoji) in all,
and `MAX_QUERY_CHARS` characters. Past them a query of a thousand emoji would AND a thousand
n-gram lookups and rank every match. The stores also bound each search's time (`SEARCH_BUDGET`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from threadline.exceptions import SearchQueryTooLarge
from threadline.storage.index._grams import has_grams, is_gram_char

__all__ = [
    'MAX_GRAM_CHARS',
    'MAX_PHRASE_WORDS',
    'MAX_QUERY_CHARS',
    'MAX_TERMS',
    'SEARCH_BUDGET',
    'Term',
    'fold',
    'parse_query',
]

MAX_TERMS = 16
MAX_PHRASE_WORDS = 16
MAX_GRAM_CHARS = 32
MAX_QUERY_CHARS = 4_000
SEARCH_BUDGET = 2.0
"""Seconds one search may work before it stops with `SearchQueryTooLarge` (a backstop: a query
within the bounds above answers in milliseconds)."""
_WORD = re.compile(r'[^\W_]+|[^\w\s]')  # letter-digit runs, as `unicode61` splits; or one other char
_TOKENS = re.compile(r'"([^"]*)"?|(\S+)')


@dataclass(frozen=True)
class Term:
    """One thing a match must hold: a word, a phrase (its words in order) or a word prefix.
    `text` is case- and accent-folded; a phrase's words are joined by single spaces."""

    kind: Literal['word', 'phrase', 'prefix']
    text: str

    @property
    def words(self) -> list[str]:
        return self.text.split(' ')

    @property
    def grams(self) -> bool:
        """Whether the term holds gram characters (CJK, symbols): answered by the n-gram index."""
        return has_grams(self.text)

    def matches(self, folded: str) -> bool:
        """Whether a folded matched span (a word, or a phrase's words) is an instance of this term."""
        span = ' '.join(folded.split())
        return span.startswith(self.text) if self.kind == 'prefix' else span == self.text


def fold(text: str) -> str:
    """Lowercase, without accents: how the indexes compare words. Gram characters (see `_grams`)
    are kept as written: decomposing a Hangul syllable would turn it into letters the n-gram
    index never saw."""
    if text.isascii():
        return text.lower()
    return text.casefold().translate(_FOLD_TABLE)


class _FoldTable(dict[int, str]):
    """`fold`'s work per character, as a `str.translate` table filled as characters are first met."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if is_gram_char(char):
            folded = char
        else:
            folded = ''.join(c for c in unicodedata.normalize('NFKD', char) if not unicodedata.combining(c))
        self[code] = folded
        return folded


_FOLD_TABLE = _FoldTable()


def _words(text: str) -> list[str]:
    """Letter-digit runs, and each symbol (emoji) on its own; other punctuation separates."""
    return [w for w in _WORD.findall(text) if w[0].isalnum() or is_gram_char(w[0])]


def parse_query(query: str) -> list[Term]:
    """The terms of `query` (see the module docstring); empty when it holds no word."""
    if len(query) > MAX_QUERY_CHARS:
        raise SearchQueryTooLarge(f'a search query holds at most {MAX_QUERY_CHARS} characters')
    terms: list[Term] = []
    for quoted, bare in _TOKENS.findall(query.replace('\x00', ' ')):
        if quoted:
            words = _words(fold(quoted))
            if len(words) > 1:
                terms.append(Term('phrase', ' '.join(words)))
            elif words:
                terms.append(Term('word', words[0]))
            continue
        words = _words(fold(bare))
        if len(words) > 1:  # `order_id`, `e-mail`: its words in a row, as the index split them
            terms.append(Term('phrase', ' '.join(words)))
        elif words:
            prefix = bare.endswith('*') and len(words[0]) >= 2 and bare.rstrip('*')[-1:].isalnum()
            terms.append(Term('prefix' if prefix else 'word', words[0]))
    unique = list(dict.fromkeys(terms))
    _check_bounds(unique)
    return unique


def _check_bounds(terms: list[Term]) -> None:
    if len(terms) > MAX_TERMS:
        raise SearchQueryTooLarge(f'a search query holds at most {MAX_TERMS} different terms')
    if any(len(t.words) > MAX_PHRASE_WORDS for t in terms if t.kind == 'phrase'):
        raise SearchQueryTooLarge(f'a search phrase holds at most {MAX_PHRASE_WORDS} words (or symbols)')
    grams = sum(sum(1 for c in t.text if is_gram_char(c)) for t in terms if t.grams)
    if grams > MAX_GRAM_CHARS:
        raise SearchQueryTooLarge(
            f'a search query holds at most {MAX_GRAM_CHARS} CJK characters or symbols (emoji) in all'
        )
