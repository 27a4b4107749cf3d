"""Every store parameter is checked at the boundary: a bad value is one `UserError` naming it, on
every backend, never a hang, an overflow, or a driver's error from deep inside."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from threadline.exceptions import ConversationNotFound, UserError
from threadline.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from threadline.storage import AsyncStore, SyncStore
from threadline.storage.testing import turn

BAD_CALLS: dict[str, tuple[str, Callable[[SyncStore], object]]] = {
    'negative last': ('last', lambda s: s.load('c', scope='s', last=-(10**12))),
    'huge limit': ('limit', lambda s: s.list('s', limit=2**63)),
    'zero limit': ('limit', lambda s: s.search('hello', scope='s', limit=0)),
    'bool limit': ('limit', lambda s: s.list('s', limit=True)),
    'negative offset': ('offset', lambda s: s.list('s', offset=-1)),
    'surrogate in query': ('query', lambda s: s.search('refund \ud800', scope='s')),
    'surrogate in title filter': ('query', lambda s: s.list('s', query='\udfff')),
    'surrogate in id': ('conversation_id', lambda s: s.load('c\ud800', scope='s')),
    'NUL in id': ('conversation_id', lambda s: s.append('c\x00', [], scope='s')),
    'empty conversation filter': ('conversation_id', lambda s: s.search('hello', scope='s', conversation_id='')),
    'empty run id': ('run_id', lambda s: s.get_run('', scope='s')),
    'overlong id': ('conversation_id', lambda s: s.load('c' * 10_000, scope='s')),
    'negative fork point': ('at', lambda s: s.fork('c', scope='s', at=-1)),
    'bad revision': ('expected_revision', lambda s: s.append('c', [], scope='s', expected_revision=-5)),
}


@pytest.mark.parametrize('case', sorted(BAD_CALLS))
def test_a_bad_parameter_is_one_user_error_naming_it(any_store: AsyncStore[SyncStore], case: str) -> None:
    name, call = BAD_CALLS[case]
    any_store.sync.append('c', turn(0, conversation_id='c'), scope='s')
    started = time.monotonic()
    with pytest.raises(UserError, match=name):
        call(any_store.sync)
    assert time.monotonic() - started < 5  # refused, not computed
    assert any_store.sync.load('c', scope='s').length == 4


def test_a_nul_byte_in_a_search_is_a_separator(any_store: AsyncStore[SyncStore]) -> None:
    any_store.sync.append('c', turn(0, conversation_id='c', text='refund'), scope='s')
    assert [h.conversation_id for h in any_store.sync.search('refund\x00', scope='s')] == ['c']
    assert any_store.sync.search('\x00', scope='s') == []


def test_every_backend_stores_a_nul_inside_message_text(any_store: AsyncStore[SyncStore]) -> None:
    messages = [
        ModelRequest(parts=[UserPromptPart('card\x00number refund')]),
        ModelResponse(parts=[TextPart('ok\x00done')]),
    ]
    any_store.sync.append('c', messages, scope='s')
    assert any_store.sync.load('c', scope='s').messages == messages
    assert [h.conversation_id for h in any_store.sync.search('refund', scope='s')] == ['c']


def test_percent_and_underscore_in_a_title_filter_are_text(any_store: AsyncStore[SyncStore]) -> None:
    any_store.sync.append('plain', turn(0, conversation_id='plain', text='hello'), scope='s')
    any_store.sync.append('pct', turn(1, conversation_id='pct', text='50% off'), scope='s')
    any_store.sync.append('under', turn(2, conversation_id='under', text='snake_case'), scope='s')
    assert [c.conversation_id for c in any_store.sync.list('s', query='%')] == ['pct']
    assert [c.conversation_id for c in any_store.sync.list('s', query='_')] == ['under']


def test_an_unknown_branch_is_not_found(any_store: AsyncStore[SyncStore]) -> None:
    any_store.sync.append('c', turn(0, conversation_id='c'), scope='s')
    with pytest.raises(ConversationNotFound):
        any_store.sync.load_at('c', scope='s', branch_id=9999, position=2)
