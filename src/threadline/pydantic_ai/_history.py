"""A stored conversation as a pydantic-ai run continues it: its messages, usage and id."""

from __future__ import annotations

import copy
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from threadline.exceptions import UserError
from threadline.messages import ModelMessage as OurModelMessage
from threadline.messages import RunUsage as OurRunUsage
from threadline.pydantic_ai._bridge import (
    from_pydantic_ai,
    to_pydantic_ai,
    usage_from_pydantic_ai,
    usage_to_pydantic_ai,
)
from threadline.pydantic_ai._view import CONVERTED
from threadline.storage import AsyncStore, StoredConversation, SyncStore

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.usage import RunUsage

__all__ = ['PydanticAIHistory', 'ThreadlineBridge', 'aload_history', 'converted', 'load_history', 'run_usage_of']

# id of a usage object handed out by load_history → (that object, what it held when handed out).
# pydantic-ai adds a run's usage into the `usage=` object in place and returns that object as
# `result.usage`, so this is how saving tells the run's own usage from what it started with.
_STARTS: dict[int, tuple[weakref.ref[RunUsage], RunUsage]] = {}


@dataclass(frozen=True)
class PydanticAIHistory:
    """A stored conversation in pydantic-ai's objects: `agent.run(prompt, **history.run_kwargs())`
    continues it, with its id and the usage its earlier runs spent (what `UsageLimits` counts)."""

    conversation_id: str
    messages: list[ModelMessage]
    usage: RunUsage
    revision: int

    def run_kwargs(self) -> dict[str, object]:
        """`message_history`, `usage` and `conversation_id` for pydantic-ai's `Agent.run`."""
        return {'message_history': self.messages, 'usage': self.usage, 'conversation_id': self.conversation_id}


# Its annotations name pydantic-ai's classes, which only type checkers import here, so `publish`
# cannot resolve them; nothing reads them at run time.
PydanticAIHistory.__module__ = 'threadline.pydantic_ai'


def converted(stored: StoredConversation) -> PydanticAIHistory:
    """`stored` in pydantic-ai's objects (its messages remembered as converted, and its usage as
    the start of the next run's)."""
    usage = usage_to_pydantic_ai(stored.usage)
    key = id(usage)
    _STARTS[key] = (weakref.ref(usage, lambda _: _STARTS.pop(key, None)), copy.deepcopy(usage))
    messages = to_pydantic_ai(stored.messages)
    CONVERTED.put_all(messages, stored.messages)  # a run over this history does not convert it back
    return PydanticAIHistory(stored.conversation_id, messages, usage, stored.revision)


def run_usage_of(result: object) -> OurRunUsage:
    """The usage of the run that made `result` alone, as Threadline's `RunUsage` (what a store adds
    to the conversation's total). Rules: a run started with `usage=` from `load_history` counts
    only what it added to it; any other run counts its whole `result.usage` (pydantic-ai starts a
    run without `usage=` from zero; pass the usage `load_history` gives, or none)."""
    from pydantic_ai.usage import RunUsage

    usage = getattr(result, 'usage', None)
    usage = usage() if callable(usage) else usage
    if not isinstance(usage, RunUsage):
        raise UserError(f'result.usage is a {type(usage).__name__}, not a pydantic-ai RunUsage')
    start = _STARTS.get(id(usage))
    if start is not None and start[0]() is usage:
        return usage_from_pydantic_ai(usage - start[1])
    return usage_from_pydantic_ai(usage)


def load_history(store: AsyncStore[SyncStore], conversation_id: str, *, scope: str) -> PydanticAIHistory:
    """The conversation `conversation_id` of `scope` for a pydantic-ai run (another scope's is not
    found: `ConversationNotFound`, as for `store.load`)."""
    return converted(store.sync.load(conversation_id, scope=scope))


async def aload_history(store: AsyncStore[SyncStore], conversation_id: str, *, scope: str) -> PydanticAIHistory:
    """`load_history` without blocking the event loop."""
    return converted(await store.load(conversation_id, scope=scope))


class ThreadlineBridge:
    """What `import threadline.pydantic_ai` registers with the message model
    (`messages.wire.register_bridge`), so audit, trust and the stores take pydantic-ai objects."""

    def messages(self, items: list[object]) -> list[OurModelMessage]:
        return from_pydantic_ai(items)

    def run_usage(self, result: object) -> OurRunUsage:
        return run_usage_of(result)
