"""Threadline for the pydantic-ai `Agent` you already have (extra `pydantic-ai`).

The only package that imports `pydantic_ai` (and, for `HarnessStepStore`, `pydantic_ai_harness`),
and the last in the package order: it may use every other package, and none imports it. Its
parts (see README.md):

- the message bridge: `from_pydantic_ai` / `to_pydantic_ai`, exact both ways;
- `load_history(store, conversation_id, scope=...)`: a stored conversation as pydantic-ai
  messages and usage, ready for `message_history=` and `usage=`;
- `StepPersistence`, `ConversationSearch`, `Memory` and `ReplayGate`: Threadline's capabilities as
  pydantic-ai capabilities; `continue_run`, `fork_run`, `latest_snapshot`,
  `list_unresolved_tool_effects` and `annotate_tool_effect` to read a run back and to mark a
  tool's effect, under the names pydantic-ai-harness uses;
- `HarnessStepStore(store, scope=...)`: the harness's `StepStore` protocol over a Threadline
  store, for a user who keeps the harness's own `StepPersistence`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from threadline._public import publish
from threadline.messages.wire import register_bridge
from threadline.pydantic_ai._bridge import (
    from_pydantic_ai,
    is_pydantic_ai_message,
    to_pydantic_ai,
    usage_from_pydantic_ai,
    usage_to_pydantic_ai,
)
from threadline.pydantic_ai._history import (
    PydanticAIHistory,
    ThreadlineBridge,
    aload_history,
    load_history,
    run_usage_of,
)
from threadline.pydantic_ai._recovery import continue_run, fork_run, latest_snapshot, list_unresolved_tool_effects
from threadline.steps import annotate_tool_effect

if TYPE_CHECKING:
    from threadline.pydantic_ai._adapted import ConversationSearch, Memory, ReplayGate
    from threadline.pydantic_ai._harness_store import HarnessStepStore
    from threadline.pydantic_ai._served import ServedAgent
    from threadline.pydantic_ai._step_persistence import StepPersistence

__all__ = [
    'ConversationSearch',
    'HarnessStepStore',
    'Memory',
    'PydanticAIHistory',
    'ReplayGate',
    'ServedAgent',
    'StepPersistence',
    'aload_history',
    'annotate_tool_effect',
    'continue_run',
    'fork_run',
    'from_pydantic_ai',
    'is_pydantic_ai_message',
    'latest_snapshot',
    'list_unresolved_tool_effects',
    'load_history',
    'run_usage_of',
    'to_pydantic_ai',
    'usage_from_pydantic_ai',
    'usage_to_pydantic_ai',
]


publish('threadline.pydantic_ai', globals(), __all__)  # the lazy ones publish themselves
register_bridge(ThreadlineBridge())  # Threadline's entry points now take pydantic-ai objects


def __getattr__(name: str) -> Any:
    # The capabilities subclass pydantic-ai's, so their modules import it: loaded on first use,
    # never by `import threadline.pydantic_ai` (the bridge and history need it only when called).
    if name == 'StepPersistence':
        from threadline.pydantic_ai._step_persistence import StepPersistence

        return StepPersistence
    if name == 'HarnessStepStore':  # needs the extra `harness` too
        from threadline.pydantic_ai._harness_store import HarnessStepStore

        return HarnessStepStore
    if name == 'ServedAgent':
        from threadline.pydantic_ai._served import ServedAgent

        return ServedAgent
    if name in ('ConversationSearch', 'Memory', 'ReplayGate'):
        from threadline.pydantic_ai import _adapted

        return getattr(_adapted, name)
    raise AttributeError(name)
