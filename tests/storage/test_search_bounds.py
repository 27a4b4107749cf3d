"""No search query costs more than an ordinary one: past a bound a query is refused with a clear
error, and every store stops a search that runs past its time budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from threadline.exceptions import SearchQueryTooLarge
from threadline.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from threadline.storage import AsyncStore, SyncStore
from threadline.storage.index import MAX_GRAM_CHARS, MAX_TERMS, parse_query


@pytest.mark.parametrize(
    ('query', 'bound'),
    [
        ('😀' * 1000, 'symbols'),
        ('😀' * 100, 'symbols'),
        ('返' * (MAX_GRAM_CHARS + 1), 'CJK'),
        (' '.join(f'word{i}' for i in range(MAX_TERMS + 1)), 'terms'),
        ('"' + ' '.join(f'w{i}' for i in range(17)) + '"', 'phrase'),
        ('a' * 4001, 'characters'),
    ],
)
def test_a_query_past_a_bound_is_refused_naming_it(query: str, bound: str) -> None:
    with pytest.raises(SearchQueryTooLarge, match=bound):
        parse_query(query)


def test_repeated_terms_count_once_and_ordinary_queries_pass() -> None:
    assert len(parse_query(' '.join(['refund'] * 200))) == 1
    assert len(parse_query(' '.join(['😀'] * 200))) == 1
    for ordinary in ('refund order', '"order 42"', 'refun*', '환불 요청', '返金をお願いします', '😀 🎉 refund'):
        assert parse_query(ordinary)


def _filled(async_store: AsyncStore[SyncStore]) -> SyncStore:
    store = async_store.sync
    for k in range(3):
        store.append(
            f'c{k}',
            [
                ModelRequest(parts=[UserPromptPart(f'refund order {k} 😀 返金をお願いします')]),
                ModelResponse(parts=[TextPart('done 😀')]),
            ],
            scope='s',
        )
    return store


def test_a_store_refuses_an_oversized_query_and_answers_ordinary_ones(any_store: AsyncStore[SyncStore]) -> None:
    store = _filled(any_store)
    with pytest.raises(SearchQueryTooLarge):
        store.search('😀' * 1000, scope='s')
    assert {h.conversation_id for h in store.search('😀 refund', scope='s')} == {'c0', 'c1', 'c2'}
    assert store.search('返金', scope='s', conversation_id='c1')
    store.close()


@pytest.mark.parametrize('backend', ['sqlite', 'file'])
def test_a_search_past_its_time_budget_stops_with_a_clear_error(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from threadline.storage import FileStore, SQLiteStore

    opened = SQLiteStore(tmp_path / 'b.db') if backend == 'sqlite' else FileStore(tmp_path / 'files')
    store = _filled(opened)
    for k in range(3, 300):
        store.append(f'c{k}', [ModelRequest(parts=[UserPromptPart(f'refund order {k} 😀')])], scope='s')
    module = 'threadline.storage.sqlite' if backend == 'sqlite' else 'threadline.storage.file._log'
    monkeypatch.setattr(f'{module}.SEARCH_BUDGET', -1.0)  # already spent: the first check stops it
    with pytest.raises(SearchQueryTooLarge, match='budget'):
        store.search('refund 😀', scope='s', limit=50)
    monkeypatch.undo()
    assert store.search('refund 😀', scope='s', limit=5)  # the store is usable right after
    store.close()
