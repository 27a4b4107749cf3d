"""Recall over stored history: `ConversationSearch` gives the model a tool to search it.

    store = SQLiteStore('chat.db')
    agent = Agent(model, capabilities=[StepPersistence(store, scope=tenant), ConversationSearch(store, scope=tenant)])

The capability has no storage of its own: it reads what `StepPersistence` or `store.save` wrote,
through the store's full-text index.
"""

from __future__ import annotations

from .._public import publish
from ._conversation_search import ConversationSearch

__all__ = ['ConversationSearch']

publish(__name__, globals(), __all__)  # after every name above exists
