"""An n-gram index beside the word index, so CJK text and symbols (emoji) are findable.

The word indexes (SQLite `unicode61`, PostgreSQL `simple`) split text on spaces and punctuation.
Chinese and Japanese put no spaces between words and Korean attaches particles to them, so
`환불` inside `환불을` or `返金` inside `返金をお願いします` is not a word of its own; and emoji are
dropped as punctuation. So every message that holds such characters also gets a gram text:

- each *gram character* (Han, Hiragana, Katakana, Hangul, and symbols such as emoji) becomes a
  unigram token; a symbol is spelled `x` + its hex code point, so the tokenizers keep it;
- each pair of gram characters next to each other becomes a bigram token;
- the unigrams come first, then `q`, then the bigrams, runs of gram characters separated by `q`.

A query word holding gram characters is answered from the gram text: one character by its
unigram, a longer run by its bigrams as a phrase (so `환불요청` needs `환불 불요 요청` in a row,
which is what a substring needs). Any other part of the word goes to the word index as usual.
"""

from __future__ import annotations

import itertools
import unicodedata

__all__ = ['gram_phrases', 'gram_runs', 'grams_of', 'has_grams', 'is_gram_char']

_RANGES = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul Compatibility Jamo
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7A3),  # Hangul Syllables
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0x20000, 0x2FA1F),  # CJK Extensions B..F, Compatibility Supplement
)


def _is_gram_code(code: int) -> bool:
    if code < 0x1100:
        return False
    return any(lo <= code <= hi for lo, hi in _RANGES) or unicodedata.category(chr(code)) == 'So'


class _GramTable(dict[int, int | None]):
    """A `str.translate` table that keeps gram characters and turns every other one into
    `other`, filled as characters are first met: the test runs once per distinct character,
    not per character of every text (CJK text repeats a few thousand characters)."""

    def __init__(self, other: int | None) -> None:
        super().__init__()
        self._other = other

    def __missing__(self, code: int) -> int | None:
        kept = code if _is_gram_code(code) else self._other
        self[code] = kept
        return kept


_GRAM_TABLE = _GramTable(None)
_RUNS_TABLE = _GramTable(ord(' '))  # no gram character is a space


def is_gram_char(char: str) -> bool:
    return bool(char.translate(_GRAM_TABLE))


def has_grams(text: str) -> bool:
    return not text.isascii() and bool(text.translate(_GRAM_TABLE))


def _token(char: str) -> str:
    return f'x{ord(char):x}' if unicodedata.category(char) == 'So' else char


def gram_runs(text: str) -> list[str]:
    """The maximal runs of gram characters in `text`, in order."""
    return text.translate(_RUNS_TABLE).split()


def grams_of(text: str) -> str:
    """The gram text of `text` ('' when it holds no gram character)."""
    if not has_grams(text):
        return ''
    runs = gram_runs(text)
    unigrams = ' '.join(_token(c) for run in runs for c in run)
    bigrams = ' q '.join(' '.join(_token(a) + _token(b) for a, b in itertools.pairwise(run)) for run in runs)
    return f'{unigrams} q {bigrams}'


def gram_phrases(word: str) -> list[list[str]]:
    """For each run of gram characters in a query word, the tokens that must appear in a row."""
    phrases = []
    for run in gram_runs(word):
        if len(run) == 1:
            phrases.append([_token(run)])
        else:
            phrases.append([_token(a) + _token(b) for a, b in itertools.pairwise(run)])
    return phrases
