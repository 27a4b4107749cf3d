"""Memory that outlives a conversation: `Memory` gives the agent a Markdown notebook per namespace.

    agent = Agent(model, capabilities=[Memory(store, scope=tenant, namespace=lambda ctx: ctx.deps.user_id)])

The notebook lives in the same store as the conversations (one connection, one backup).
"""

from __future__ import annotations

from threadline._public import publish
from threadline.memory._memory import Memory

__all__ = ['Memory']

publish(__name__, globals(), __all__)  # after every name above exists
