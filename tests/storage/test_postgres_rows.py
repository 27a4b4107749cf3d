"""PostgreSQL keeps its search fast after bulk writes: each message row is written once, with its
search columns (grams in a narrow table of their own, migration 11), and the GIN indexes keep
small pending lists (migration 10)."""

from __future__ import annotations

import pytest

from tests.storage.conftest import fresh_postgres_url, needs_postgres
from threadline import ModelRequest, ModelResponse, TextPart, UserPromptPart

pytestmark = needs_postgres


def test_each_message_row_is_written_once_with_its_search_columns() -> None:
    import psycopg

    from threadline.storage import PostgresStore

    url = fresh_postgres_url()
    store = PostgresStore(url)
    try:
        history = [ModelRequest(parts=[UserPromptPart('환불 요청 refund')]), ModelResponse(parts=[TextPart('done 😀')])]
        store.sync.append('c', history * 20, scope='acme')
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute('CREATE EXTENSION IF NOT EXISTS pageinspect')
            pages = conn.execute("SELECT pg_relation_size('messages') / current_setting('block_size')::int").fetchone()
            assert pages is not None
            versions = dead = 0
            for page in range(pages[0]):
                row = conn.execute(
                    # a row version replaced by an update points to its successor (t_ctid); a
                    # version only locked (the gram row's foreign key does) points to itself
                    "SELECT count(*), count(*) FILTER (WHERE t_ctid <> ('(' || %s::int || ',' || lp || ')')::tid) "
                    "FROM heap_page_items(get_raw_page('messages', %s)) WHERE lp_flags = 1",
                    (page, page),
                ).fetchone()
                assert row is not None
                versions, dead = versions + row[0], dead + row[1]
            # 40 messages, and not one row version replaced by an update
            assert (versions, dead) == (40, 0)
            indexed = conn.execute(
                "SELECT count(*) FILTER (WHERE tsv IS NOT NULL), count(*) FILTER (WHERE scope = 'acme'), "
                "(SELECT count(*) FROM message_grams WHERE scope = 'acme') FROM messages"
            ).fetchone()
            assert indexed == (40, 40, 40)
        assert [h.position for h in store.sync.search('환불', scope='acme', conversation_id='c', limit=3)] == [0, 2, 4]
        assert len(store.sync.search('😀', scope='acme', limit=100)) == 20
    finally:
        store.close()


@pytest.mark.parametrize('index', ['messages_tsv', 'message_grams_grams'])
def test_the_gin_indexes_keep_small_pending_lists(index: str) -> None:
    import psycopg

    from threadline.storage import PostgresStore

    url = fresh_postgres_url()
    PostgresStore(url).close()
    with psycopg.connect(url) as conn:
        row = conn.execute('SELECT reloptions FROM pg_class WHERE relname = %s', (index,)).fetchone()
    assert row is not None and 'gin_pending_list_limit=512' in (row[0] or [])


def test_a_store_wide_search_ranks_exactly_the_newest_matches_of_its_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    """However the matches lie (rare, clustered, spread, or mostly in another scope), the ranked
    set is the scope's newest `RANK_CAP` matches, each once."""
    import itertools
    import random

    from threadline.storage import PostgresStore
    from threadline.storage.index import _postgres as _pg_search

    store = PostgresStore(fresh_postgres_url())
    rng = random.Random(3)
    try:
        for case in range(12):
            cap = rng.choice([1, 3, 7, 20])
            monkeypatch.setattr(_pg_search, 'RANK_CAP', cap)
            share = rng.choice([0.02, 0.2, 0.9])
            mine: list[tuple[str, int]] = []
            for k in range(rng.randrange(1, 5)):
                scope = rng.choice([f'mine{case}', f'theirs{case}'])
                texts = ['refund now' if rng.random() < share else 'nothing here' for _ in range(rng.randrange(1, 40))]
                history = [ModelRequest(parts=[UserPromptPart(t)]) for t in texts]
                store.sync.append(f'c{case}-{k}', history, scope=scope)
                if scope == f'mine{case}':
                    mine += [(f'c{case}-{k}', p) for p, t in enumerate(texts) if t == 'refund now']
            hits = store.sync.search('refund', scope=f'mine{case}', limit=100)
            expected = set(itertools.islice(reversed(mine), cap))  # appended in order: newest last
            assert {(h.conversation_id, h.position) for h in hits} == expected, (case, cap, share)
            assert len(hits) == len(expected)
    finally:
        store.close()
