"""`ToolReturn`: what a tool returns when it has more to say than its result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Generic, Literal, TypeVar

__all__ = ['ToolReturn']

ReturnValueT = TypeVar('ReturnValueT')


@dataclass
class ToolReturn(Generic[ReturnValueT]):
    """A tool's result with extras. Rules (as pydantic-ai records them, checked against it):
    - `return_value` is the `ToolReturnPart`'s content, `metadata` its metadata (kept in the
      history, never sent to the model);
    - `content` is sent as a `UserPromptPart` at the end of the same request, after every result
      of the step (use it for content that does not belong inside a tool result);
    - `tools` reveals tools registered with `defer_loading=True` for the rest of the
      conversation: the names go in a `ToolAvailabilityDeltaPart` right after this result
      (deduplicated, first appearance first, names revealed earlier left out); a name that is not
      a deferred tool is kept verbatim and has no effect.
    """

    return_value: ReturnValueT
    _: KW_ONLY
    content: str | Sequence[Any] | None = None
    metadata: Any = None
    tools: list[str] | None = None
    kind: Literal['tool-return'] = 'tool-return'
    """What this is, as pydantic-ai marks it (so a serialized `ToolReturn` can be told apart)."""
