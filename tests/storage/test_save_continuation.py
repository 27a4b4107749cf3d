"""`save()` never stores a conversation with a hole: a run that continues history the
conversation does not hold is refused, with nothing saved."""

from __future__ import annotations

import pytest

from threadline import Agent
from threadline.exceptions import UserError
from threadline.models.test import TestModel
from threadline.storage import AsyncStore, SyncStore


def test_a_continuation_of_an_unsaved_run_is_refused(any_store: AsyncStore[SyncStore]) -> None:
    store = any_store.sync
    agent = Agent(TestModel())
    first = agent.run_sync('hello', conversation_id='c')  # never saved
    second = agent.run_sync('again', message_history=first.all_messages(), conversation_id='c')
    with pytest.raises(UserError, match='continues 2 messages of history'):
        store.save(second, scope='s')
    assert store.conversation_state('c', scope='s') is None  # nothing was saved
    store.save(first, scope='s')
    store.save(second, scope='s')  # in order: both runs, the whole history
    assert store.load('c', scope='s').length == 4
    third = agent.run_sync('more', message_history=store.load('c', scope='s').messages, conversation_id='c')
    store.save(third, scope='s')
    assert store.load('c', scope='s').length == 6
