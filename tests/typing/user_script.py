"""A user's script, type-checked by `tests/test_typing.py` under `mypy --strict`: every store call
must come out precisely typed, never `Any`."""

from __future__ import annotations

import asyncio
from typing import assert_type

from threadline.agent import Agent
from threadline.messages import ModelMessage
from threadline.models.test import TestModel
from threadline.storage import (
    AsyncStore,
    ChainCheck,
    FileBackend,
    SQLiteStore,
    SQLStore,
    StepPersistence,
    StoredConversation,
    open_store,
)

store = SQLiteStore('app.db')
assert_type(store.sync, SQLStore)
stored = store.sync.load('c1', scope='tenant-1')
assert_type(stored, StoredConversation)
assert_type(stored.messages, list[ModelMessage])
assert_type(store.sync.append('c1', stored.messages, scope='tenant-1'), int)
assert_type(store.sync.verify('c1', scope='tenant-1'), ChainCheck)

opened = open_store('app.db')
assert_type(opened, AsyncStore[SQLStore] | AsyncStore[FileBackend])
assert_type(opened.sync.load('c1', scope='tenant-1'), StoredConversation)


class Deps:
    tenant = 'tenant-1'


# A capability for any agent's deps needs no annotation of its own and fits an agent with deps.
persisted = StepPersistence(store, scope='tenant-1')
agent: Agent[Deps, str] = Agent(
    TestModel(), deps_type=Deps, capabilities=[persisted, StepPersistence(store, scope=lambda ctx: 'tenant-2')]
)


async def main() -> None:
    loaded = await store.load('c1', scope='tenant-1', last=10)
    assert_type(loaded, StoredConversation)
    assert_type(await store.conversation_state('c1', scope='tenant-1'), tuple[int, int] | None)


asyncio.run(main())
