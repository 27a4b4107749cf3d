"""The query syntax can never reach the search engine's own: any text is words, phrases, prefixes."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples
from threadline.storage import SQLiteStore
from threadline.storage.index._query import MAX_TERMS, Term, parse_query
from threadline.storage.testing._samples import turn

SAFE = re.compile(r'(?:[^\W_]|[^\w\s"])+(?: (?:[^\W_]|[^\w\s"])+)*')  # words, symbols; never a quote
syntaxy = st.lists(
    st.sampled_from([*'ab é漢😀환불"*()-:^+_{}[]\\\'\x00', 'NOT ', ' OR ', 'AND', 'NEAR', 'body:']), max_size=20
).map(''.join)


@settings(max_examples=examples(1000))
@given(st.text(max_size=60) | syntaxy)
def test_every_term_is_only_words(query: str) -> None:
    terms = parse_query(query)
    assert len(terms) <= MAX_TERMS and len(set(terms)) == len(terms)
    for term in terms:
        assert SAFE.fullmatch(term.text), term
        assert term.kind != 'prefix' or len(term.text) >= 2


def test_the_syntax() -> None:
    assert parse_query('Refund "Order  42" refun* x* OR') == [
        Term('word', 'refund'),
        Term('phrase', 'order 42'),
        Term('prefix', 'refun'),
        Term('word', 'x'),
        Term('word', 'or'),
    ]


def test_any_query_is_answered_never_an_engine_error(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 's.db')
    store.sync.append('c', turn(0, conversation_id='c'), scope='s')

    @settings(max_examples=examples(400), deadline=None)
    @given(syntaxy | st.text(max_size=30))
    def search(query: str) -> None:
        store.sync.search(query, scope='s')
        store.sync.search(query, scope='s', conversation_id='c', include_dropped=True)

    search()


def _is_gram(char: str) -> bool:
    """The gram characters, restated: CJK scripts and Hangul (their blocks), and symbols."""
    import unicodedata

    blocks = [(0x1100, 0x11FF), (0x3040, 0x30FF), (0x3130, 0x318F), (0x3400, 0x4DBF), (0x4E00, 0x9FFF)]
    blocks += [(0xAC00, 0xD7A3), (0xF900, 0xFAFF), (0x20000, 0x2FA1F)]
    code = ord(char)
    return code >= 0x1100 and (any(lo <= code <= hi for lo, hi in blocks) or unicodedata.category(char) == 'So')


def _fold_slowly(text: str) -> str:
    import unicodedata

    out = []
    for char in text.casefold():
        if _is_gram(char):
            out.append(char)
        else:
            out.extend(c for c in unicodedata.normalize('NFKD', char) if not unicodedata.combining(c))
    return ''.join(out)


@settings(max_examples=examples(1000))
@given(st.text(alphabet=st.characters(exclude_categories=['Cs']), max_size=40) | syntaxy)
def test_folding_and_gram_runs_follow_their_rules_character_by_character(text: str) -> None:
    """`fold` and the gram helpers work through cached per-character tables; whatever the text,
    they give what the rules give applied one character at a time: lowercase without accents,
    gram characters (never decomposed, so Hangul stays syllables) kept as written."""
    from threadline.storage.index._grams import gram_runs, has_grams, is_gram_char
    from threadline.storage.index._query import fold

    assert fold(text) == _fold_slowly(text)
    assert [is_gram_char(c) for c in text] == [_is_gram(c) for c in text]
    assert has_grams(text) == any(_is_gram(c) for c in text)
    assert ''.join(gram_runs(text)) == ''.join(c for c in text if _is_gram(c))
    assert all(run and all(_is_gram(c) for c in run) for run in gram_runs(text))
