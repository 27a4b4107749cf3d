"""A search scoped to one conversation ranks by that conversation alone (SQLite).

Its cost and its scores must not depend on what the rest of the store holds: not on other
conversations' size (issue 15 §5), and not on other tenants' words (their term frequencies would
otherwise show through the scores).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from threadline import ModelRequest, ModelResponse, TextPart, UserPromptPart
from threadline.storage import SQLiteStore


def chat(*texts: str) -> list[ModelRequest | ModelResponse]:
    return [
        ModelRequest(parts=[UserPromptPart(t)]) if i % 2 == 0 else ModelResponse(parts=[TextPart(t)])
        for i, t in enumerate(texts)
    ]


TEXTS = (
    'my refund for order 42 has not arrived',
    'the refund was sent on Monday; refunds take five days',
    'refund refund refund',
    'nothing to see here',
    'a very long message that mentions a refund once among many other words about shipping and parcels',
)


def test_scoped_ranking_prefers_more_and_denser_matches(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 's.db')
    store.sync.append('c', chat(*TEXTS), scope='acme')
    hits = store.sync.search('refund', scope='acme', conversation_id='c', limit=10)
    assert [h.position for h in hits] == [2, 0, 1, 4]  # 'refund' x3 first, the long message last
    assert hits[0].snippet == '[refund] [refund] [refund]'
    assert all(h.conversation_id == 'c' for h in hits) and hits[0].score > hits[-1].score > 0
    long = hits[-1].snippet
    assert '[refund]' in long and long.endswith('...')


def test_scoped_scores_do_not_depend_on_other_tenants(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 's.db')
    store.sync.append('c', chat(*TEXTS), scope='acme')
    before = [(h.position, h.score) for h in store.sync.search('refund order', scope='acme', conversation_id='c')]
    for k in range(30):  # another tenant writes the same words a lot
        store.sync.append(f'other-{k}', chat(*['refund order refund'] * 20), scope='globex')
    after = [(h.position, h.score) for h in store.sync.search('refund order', scope='acme', conversation_id='c')]
    assert before == after and [p for p, _ in before] == [0]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(['alpha', 'beta', 'Gamma', 'délta', 'x']), min_size=1, max_size=8), max_size=12),
    st.sampled_from(['alpha', 'beta', 'gamma', 'delta', 'alpha beta']),
)
def test_scoped_hits_are_exactly_the_messages_holding_every_term(words: list[list[str]], query: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        store = SQLiteStore(Path(directory) / 's.db')
        texts = [' '.join(w) for w in words]
        if texts:
            store.sync.append('c', chat(*texts), scope='acme')
        else:
            store.sync.append('c', chat('empty'), scope='acme')
            texts = ['empty']
        hits = store.sync.search(query, scope='acme', conversation_id='c', limit=100)
        folded = [t.lower().replace('é', 'e').split() for t in texts]
        expected = {i for i, ws in enumerate(folded) if all(q in ws for q in query.split())}
        assert {h.position for h in hits} == expected
        assert len(hits) == len(expected)  # no duplicates
        store.close()


@pytest.fixture
def small_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SQLiteStore:
    """A store where a term in more than 5 messages is frequent, and frequent terms are ranked
    among the newest 8 matches, so a test store has frequent terms."""
    from threadline.storage.index import _sqlite as _sqlite_search

    monkeypatch.setattr(_sqlite_search, 'FREQUENT', 5)
    monkeypatch.setattr(_sqlite_search, 'WINDOW', 8)
    return SQLiteStore(tmp_path / 's.db')


def test_a_frequent_word_ranks_the_newest_matches_of_the_scope(small_store: SQLiteStore) -> None:
    store = small_store
    store.sync.append('old', chat(*[f'refund number {k}' for k in range(10)]), scope='acme')
    store.sync.append('new', chat('refund refund refund', 'a refund', 'refund'), scope='acme')
    store.sync.append('theirs', chat(*['refund'] * 20), scope='globex')
    hits = store.sync.search('refund', scope='acme', limit=5)
    assert len(hits) == 5 and {h.conversation_id for h in hits} <= {'old', 'new'}
    assert (hits[0].conversation_id, hits[0].position) == ('new', 0)  # the densest match, within the window
    assert all(h.score > 0 and '[refund]' in h.snippet for h in hits)
    assert store.sync.search('"refund number"', scope='acme', limit=20)  # phrases keep the usual path


def test_a_frequent_cjk_term_ranks_the_newest_matches_of_the_scope(small_store: SQLiteStore) -> None:
    store = small_store
    store.sync.append('old', chat(*[f'환불 문의 {k}번' for k in range(10)]), scope='acme')
    store.sync.append('new', chat('환불을 환불로 환불해 주세요', '환불 요청', '주문 환불'), scope='acme')
    store.sync.append('theirs', chat(*['환불'] * 20), scope='globex')
    hits = store.sync.search('환불', scope='acme', limit=5)
    # ranked among the newest 8 matches of the scope: the new conversation's 3, old's last 5
    window = {('new', p) for p in range(3)} | {('old', p) for p in range(5, 10)}
    assert len(hits) == 5 and {(h.conversation_id, h.position) for h in hits} <= window
    assert (hits[0].conversation_id, hits[0].position) == ('new', 0)  # the densest match
    assert all(h.score > 0 and '[환불]' in h.snippet for h in hits)
    newest = store.sync.search('환불 주문', scope='acme', limit=5)  # every term must match
    assert [(h.conversation_id, h.position) for h in newest] == [('new', 2)]
    assert not store.sync.search('환불', scope='nobody', limit=5)


def test_a_snippet_of_text_without_spaces_is_a_window_of_characters(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 's.db')
    text = 'お客様の注文について' * 30 + '返金をお願いします' + 'ご確認ください' * 30  # ~540 characters, no space
    store.sync.append('c', chat(text, '了解しました'), scope='acme')
    for conversation in ('c', None):
        [hit] = store.sync.search('返金', scope='acme', conversation_id=conversation)
        assert '[返金]' in hit.snippet
        assert hit.snippet.startswith('...') and hit.snippet.endswith('...') and len(hit.snippet) <= 130
