"""pydantic-ai's run results and messages handed to a store, seen as Threadline's.

`store.save(result)` takes pydantic-ai's `AgentRunResult` and `StreamedRunResult` as it takes
Threadline's, and `append(messages=...)` its messages: the store's argument checks (`_validate`)
pass each such argument through `own_argument` first, so every backend sees Threadline objects.

Rules:
- A result whose class comes from pydantic-ai is read through `ForeignRun`: its ids and output as
  they are, its messages converted exactly (`messages.wire.own_messages`) and its own usage (not
  what `usage=` started it with: `threadline.pydantic_ai.run_usage_of`), each read once, when the
  store asks for it.
- A list or tuple of messages holding pydantic-ai messages is converted; anything else is passed
  on unchanged, for the store's own checks to name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property

from threadline.messages import ModelMessage, RunUsage
from threadline.messages.wire import from_pydantic_ai_package, own_messages, own_run_usage

__all__ = ['ForeignRun', 'own_argument']


class ForeignRun:
    """A pydantic-ai run result as the `FinishedRun` a store's `save` reads."""

    def __init__(self, result: object) -> None:
        self._result = result

    @property
    def run_id(self) -> str | None:
        value = getattr(self._result, 'run_id', None)
        return value if isinstance(value, str) else None

    @property
    def conversation_id(self) -> str | None:
        value = getattr(self._result, 'conversation_id', None)
        return value if isinstance(value, str) else None

    @property
    def output(self) -> object:
        return getattr(self._result, 'output', None)

    @cached_property
    def run_usage(self) -> RunUsage:
        return own_run_usage(self._result)

    def new_messages(self) -> list[ModelMessage]:
        return self._new

    def all_messages(self) -> list[ModelMessage]:
        return self._all

    @cached_property
    def _new(self) -> list[ModelMessage]:
        return own_messages(self._read('new_messages'), 'result.new_messages()')

    @cached_property
    def _all(self) -> list[ModelMessage]:
        return own_messages(self._read('all_messages'), 'result.all_messages()')

    def _read(self, method: str) -> Sequence[object]:
        read: Callable[[], Sequence[object]] | None = getattr(self._result, method, None)
        return read() if callable(read) else []


def own_argument(name: str, value: object) -> object:
    """`value` as the store reads it (rules in the module docstring)."""
    if name == 'result' and from_pydantic_ai_package(value):
        return ForeignRun(value)
    if name == 'messages' and isinstance(value, list | tuple) and any(from_pydantic_ai_package(m) for m in value):
        return own_messages(value)
    return value
