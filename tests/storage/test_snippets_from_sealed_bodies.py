"""What a search hit shows is read from the stored message, which the seal covers, never from the
search index's own copy of its text: an edited index row cannot change what the model is shown.
And the snippet is a sentence's worth of words on every backend."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.storage.conftest import fresh_postgres_url, needs_postgres
from threadline.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from threadline.storage import SQLiteStore, SyncStore

SENTENCE = 'The code for the blue locker on the second floor of the east wing is PELICAN, change it monthly.'


def _fill(store: SyncStore) -> None:
    store.append(
        'c',
        [ModelRequest(parts=[UserPromptPart('where is it?')]), ModelResponse(parts=[TextPart(SENTENCE)])],
        scope='s',
    )


def test_an_edited_sqlite_index_row_does_not_change_the_snippet(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 's.db').sync
    _fill(store)
    db = sqlite3.connect(tmp_path / 's.db')
    db.execute("UPDATE message_fts SET body = 'the locker code is FORGED' WHERE body LIKE '%PELICAN%'")
    db.commit()
    [hit] = store.search('locker', scope='s')
    assert 'blue [locker]' in hit.snippet and 'FORGED' not in hit.snippet


@needs_postgres
def test_an_edited_postgres_index_row_does_not_change_the_snippet() -> None:
    import psycopg

    from threadline.storage import PostgresStore

    url = fresh_postgres_url()
    store = PostgresStore(url).sync
    _fill(store)
    with psycopg.connect(url) as db:
        db.execute("UPDATE messages SET search_text = 'the locker code is FORGED' WHERE search_text LIKE '%PELICAN%'")
    [hit] = store.search('locker', scope='s')
    assert 'blue [locker]' in hit.snippet and 'FORGED' not in hit.snippet
    assert len(hit.snippet.split()) >= 10  # a sentence's worth, as SQLite gives, not four words


@pytest.mark.parametrize('query', ['locker', 'lock*', '"blue locker"', 'PELICAN'])
def test_the_snippet_marks_the_match_in_context(any_store: object, query: str) -> None:
    from threadline.storage import AsyncStore

    assert isinstance(any_store, AsyncStore)
    store = any_store.sync
    _fill(store)
    [hit] = store.search(query, scope='s')
    assert '[' in hit.snippet and len(hit.snippet.split()) >= 10, hit.snippet


def test_matches_say_where_the_marks_are_so_real_brackets_are_never_taken_for_one(any_store: object) -> None:
    from threadline.storage import AsyncStore

    assert isinstance(any_store, AsyncStore)
    store = any_store.sync
    store.append('b', [ModelRequest(parts=[UserPromptPart('see [note] about the locker [x]')])], scope='s')
    [hit] = store.search('locker', scope='s')
    assert [hit.snippet[a:b] for a, b in hit.matches] == ['locker']
    assert '[note]' in hit.snippet  # the text's own brackets, not a mark
