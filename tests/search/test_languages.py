"""Text in any language is findable: Korean, Japanese, Chinese, short terms and emoji."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from threadline import ModelRequest, ModelResponse, TextPart, UserPromptPart
from threadline.storage import AsyncStore, SQLiteStore

TEXTS = (
    '주문한 상품의 환불을 요청합니다',  # Korean: the particle is attached (환불을)
    '네, 환불 요청을 접수했어요 😀',
    '返金をお願いします',  # Japanese: no spaces at all
    '好的 我们已经开始办理退款 🎉',  # Chinese
    'refund for my iPad용 케이스',
    'nothing here',
)


def chat(*texts: str) -> list[Any]:
    return [
        ModelRequest(parts=[UserPromptPart(t)]) if i % 2 == 0 else ModelResponse(parts=[TextPart(t)])
        for i, t in enumerate(texts)
    ]


@pytest.mark.parametrize(
    ('query', 'positions'),
    [
        ('환불', [0, 1]),  # two syllables, inside 환불을
        ('환불 요청', [0, 1]),  # both words, anywhere
        ('"환불을 요청"', [0]),  # a phrase
        ('요청합', [0]),  # inside a word
        ('返金', [2]),
        ('返', [2]),  # one character
        ('退款', [3]),
        ('😀', [1]),  # a single emoji
        ('🎉 退款', [3]),
        ('ipad용', [4]),
        ('refund 환불', []),  # every term must match
        ('없는말', []),
    ],
)
def test_cjk_words_short_terms_and_emoji_are_found(
    any_store: AsyncStore[Any], query: str, positions: list[int]
) -> None:
    any_store.sync.append('c', chat(*TEXTS), scope='s')
    any_store.sync.append('other', chat(*TEXTS), scope='elsewhere')
    scoped = any_store.sync.search(query, scope='s', conversation_id='c')
    wide = any_store.sync.search(query, scope='s')
    assert sorted(h.position for h in scoped) == positions
    assert sorted(h.position for h in wide) == positions and {h.conversation_id for h in wide} <= {'c'}
    for hit in scoped:
        assert '[' in hit.snippet and ']' in hit.snippet


def test_a_cjk_word_is_found_only_where_its_characters_are_next_to_each_other(any_store: AsyncStore[Any]) -> None:
    # 支払 and 払い are both in the first text, but not as 支払い
    texts = ['この支払は払いません', 'お支払いをお願いします', '支払', '払い']
    any_store.sync.append('c', chat(*texts), scope='s')
    for conversation in ('c', None):
        hits = any_store.sync.search('支払い', scope='s', conversation_id=conversation)
        assert [h.position for h in hits] == [1] and '[支払い]' in hits[0].snippet


def test_an_older_database_gets_its_gram_index_on_open(tmp_path: Path) -> None:
    path = tmp_path / 'old.db'
    store = SQLiteStore(path)
    store.sync.append('c', chat(*TEXTS), scope='s')
    store.close()
    with sqlite3.connect(path) as conn:  # as a database from before the gram index looked
        conn.execute('DROP TABLE message_grams')
        conn.execute("DELETE FROM threadline_schema_migrations WHERE name = 'gram_index'")
    reopened = SQLiteStore(path)
    assert sorted(h.position for h in reopened.sync.search('환불', scope='s', conversation_id='c')) == [0, 1]
    assert [h.position for h in reopened.sync.search('😀', scope='s')] == [1]


def test_an_older_postgres_database_gets_its_grams_on_open() -> None:
    from tests.storage.conftest import POSTGRES_URL, fresh_postgres_url

    if not POSTGRES_URL:
        pytest.skip('THREADLINE_TEST_POSTGRES_URL is not set (CI sets it; export it to run PostgreSQL tests)')
    import psycopg

    from threadline.storage import PostgresStore

    url = fresh_postgres_url()
    store = PostgresStore(url)
    store.sync.append('c', chat(*TEXTS), scope='s')
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute('DROP TABLE message_grams')
        conn.execute("DELETE FROM threadline_schema_migrations WHERE name IN ('gram_index', 'gram_table')")
    reopened = PostgresStore(url)
    try:
        assert sorted(h.position for h in reopened.sync.search('환불', scope='s', conversation_id='c')) == [0, 1]
    finally:
        reopened.close()
