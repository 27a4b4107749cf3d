"""The text index behind `store.search(...)`, named for the packages that build on it.

A query is parsed once (`parse_query`: words, `"phrases"`, `prefix*`, folded as the index folds
them); a message's searchable text is `message_text`. Each dialect's search lives here beside them
(`_sqlite.py` over FTS5 and an n-gram table, `_postgres.py` over `tsvector` and the same n-grams).
"""

from __future__ import annotations

from threadline.storage.index._query import (
    MAX_GRAM_CHARS,
    MAX_PHRASE_WORDS,
    MAX_QUERY_CHARS,
    MAX_TERMS,
    SEARCH_BUDGET,
    Term,
    fold,
    parse_query,
)
from threadline.storage.index._text import message_text

__all__ = [
    'MAX_GRAM_CHARS',
    'MAX_PHRASE_WORDS',
    'MAX_QUERY_CHARS',
    'MAX_TERMS',
    'SEARCH_BUDGET',
    'Term',
    'fold',
    'message_text',
    'parse_query',
]
