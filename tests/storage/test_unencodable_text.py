"""Text UTF-8 cannot carry (a lone surrogate) is refused with an error naming where it is, on every
backend, and nothing is written."""

from __future__ import annotations

import pytest

from threadline.exceptions import MessageValidationError, UserError
from threadline.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from threadline.storage import AsyncStore, SyncStore


def test_a_lone_surrogate_in_a_message_or_a_notebook_is_a_clear_error(any_store: AsyncStore[SyncStore]) -> None:
    store = any_store.sync
    store.append('c', [ModelRequest(parts=[UserPromptPart('fine')])], scope='s')
    bad = [ModelResponse(parts=[TextPart('ok')]), ModelRequest(parts=[UserPromptPart('bad \ud800 text')])]
    with pytest.raises(MessageValidationError, match=r'messages\[1\].*lone surrogate'):
        store.append('c', bad, scope='s')
    assert store.load('c', scope='s').length == 1  # nothing of the refused batch was written
    with pytest.raises(MessageValidationError, match='lone surrogate'):
        store.append('new', bad, scope='s')
    with pytest.raises(UserError, match='namespace'):
        store.write_notebook('alice\ud800', 'x', scope='s', expected_version=0)
    with pytest.raises(UserError, match='content'):
        store.write_notebook('alice', 'x \udfff', scope='s', expected_version=0)
    with pytest.raises(UserError, match='scope'):
        store.read_notebook('alice', scope='s\ud800')
    assert store.read_notebook('alice', scope='s') is None
