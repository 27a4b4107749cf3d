"""The search query syntax every store reads, and nothing else: a query is never raw FTS syntax.

- `refund order`: messages holding every word (case and accents ignored);
- `"order 42"`: the words next to each other, in that order (a phrase);
- `refun*`: words starting with `refun` (a prefix of at least two characters);
- `order_id`, `e-mail`: a token the index splits into several words is those words in a row;
- everything else, operators included (`AND`, `OR`, `NOT`, `NEAR`, `-`, `:`, `(`, `^`), is
  treated as words or as separators between them, so no query can reach the engine's own
  syntax. At most 16 terms are used.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from threadline.storage.index._grams import has_grams, is_gram_char

__all__ = ['MAX_TERMS', 'Term', 'fold', 'parse_query']

MAX_TERMS = 16
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
    return unique[:MAX_TERMS]
