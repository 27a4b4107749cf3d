"""The query syntax can never reach the search engine's own: any text is words, phrases, prefixes."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples
from threadline.storage import SQLiteStore
from threadline.storage._query import MAX_TERMS, Term, parse_query
from threadline.storage._samples import turn

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
