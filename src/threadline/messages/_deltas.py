"""What a stream adds to the part it is building: `TextPartDelta`, `ThinkingPartDelta` and
`ToolCallPartDelta`, and applying one to its part (`apply`), as a custom model's stream does.

Rules (pydantic-ai 2.62's, checked against it):
- Text and thinking deltas append their content; a signature replaces the part's; a provider name
  replaces it; provider details merge over the part's (None when both are empty); a text delta's
  `citations_delta` replaces the part's citations.
- A tool call delta appends to the name, and to JSON-text arguments, or merges into dict
  arguments; mixing JSON text and a dict is an `UnexpectedModelBehavior` (a provider bug); a call
  id replaces the part's. Applied to another delta it accumulates, and becomes a `ToolCallPart`
  once it has a name (`as_part` makes one straight away, or None without a name).
- Applying a delta to a part of another kind is a `ValueError`; parts are never changed in place.
"""

# No `from __future__ import annotations`: pydantic resolves these names for a `TypeAdapter` of
# an event (see `_events`).
from dataclasses import dataclass, replace
from typing import Any, Literal

import msgspec

from threadline.exceptions import UnexpectedModelBehavior
from threadline.messages._messages import ModelResponsePart
from threadline.messages._parts import NativeToolCallPart, TextPart, ThinkingPart, ToolCallPart

__all__ = ['TextPartDelta', 'ThinkingPartDelta', 'ToolCallPartDelta']

_Details = dict[str, Any]
_Args = str | _Details | None


def _merged(old: _Details | None, new: _Details | None) -> _Details | None:
    return {**(old or {}), **(new or {})} or None


@dataclass(frozen=True)
class TextPartDelta:
    """More text for the text part being streamed."""

    content_delta: str
    provider_name: str | None = None
    provider_details: _Details | None = None
    citations_delta: list[Any] | None = None
    part_delta_kind: Literal['text'] = 'text'

    def apply(self, part: ModelResponsePart) -> TextPart:
        """`part` (a `TextPart`) with this delta added."""
        if not isinstance(part, TextPart):
            raise ValueError('a TextPartDelta applies to a TextPart only')
        return msgspec.structs.replace(
            part,
            content=part.content + self.content_delta,
            provider_name=self.provider_name or part.provider_name,
            provider_details=_merged(part.provider_details, self.provider_details),
            citations=part.citations if self.citations_delta is None else self.citations_delta,
        )


@dataclass(frozen=True)
class ThinkingPartDelta:
    """More thinking (and/or its signature) for the thinking part being streamed."""

    content_delta: str | None = None
    signature_delta: str | None = None
    provider_name: str | None = None
    provider_details: _Details | None = None
    part_delta_kind: Literal['thinking'] = 'thinking'

    def apply(self, part: 'ModelResponsePart | ThinkingPartDelta') -> 'ThinkingPart | ThinkingPartDelta':
        """`part` (a `ThinkingPart`, or an earlier delta) with this delta added."""
        if isinstance(part, ThinkingPart):
            return msgspec.structs.replace(
                part,
                content=part.content + self.content_delta if self.content_delta else part.content,
                signature=self.signature_delta if self.signature_delta is not None else part.signature,
                provider_name=self.provider_name if self.provider_name is not None else part.provider_name,
                provider_details=_merged(part.provider_details, self.provider_details),
            )
        if isinstance(part, ThinkingPartDelta):
            if self.content_delta is None and self.signature_delta is None:
                raise ValueError('a ThinkingPartDelta with neither content nor a signature adds nothing')
            merged = part
            if self.content_delta is not None:
                merged = replace(merged, content_delta=(merged.content_delta or '') + self.content_delta)
            if self.signature_delta is not None:
                merged = replace(merged, signature_delta=self.signature_delta)
            if self.provider_name is not None:
                merged = replace(merged, provider_name=self.provider_name)
            if self.provider_details is not None:
                merged = replace(merged, provider_details={**(merged.provider_details or {}), **self.provider_details})
            return merged
        raise ValueError('a ThinkingPartDelta applies to a ThinkingPart or a ThinkingPartDelta only')


@dataclass(frozen=True)
class ToolCallPartDelta:
    """More of a tool call being streamed: a name, a chunk of JSON arguments (or a dict to merge),
    an id."""

    tool_name_delta: str | None = None
    args_delta: _Args = None
    tool_call_id: str | None = None
    provider_name: str | None = None
    provider_details: _Details | None = None
    part_delta_kind: Literal['tool_call'] = 'tool_call'

    def as_part(self) -> ToolCallPart | None:
        """The call this delta starts, or None while it has no name."""
        if self.tool_name_delta is None:
            return None
        return self._part(self.tool_name_delta, self.args_delta, self.tool_call_id)

    def apply(
        self, part: 'ModelResponsePart | ToolCallPartDelta'
    ) -> 'ToolCallPart | NativeToolCallPart | ToolCallPartDelta':
        """`part` (a call, or an earlier delta) with this delta added (see the module rules)."""
        if isinstance(part, ToolCallPart | NativeToolCallPart):
            args = _joined_args(part.args, self.args_delta)
            return msgspec.structs.replace(
                part,
                tool_name=part.tool_name + (self.tool_name_delta or ''),
                args=args,
                tool_call_id=self.tool_call_id or part.tool_call_id,
                provider_name=self.provider_name or part.provider_name,
                provider_details=_merged(part.provider_details, self.provider_details)
                if self.provider_details
                else part.provider_details,
            )
        if isinstance(part, ToolCallPartDelta):
            merged = ToolCallPartDelta(
                (part.tool_name_delta or '') + self.tool_name_delta if self.tool_name_delta else part.tool_name_delta,
                _joined_args(part.args_delta, self.args_delta),
                self.tool_call_id or part.tool_call_id,
                self.provider_name or part.provider_name,
                _merged(part.provider_details, self.provider_details)
                if self.provider_details
                else part.provider_details,
            )
            return merged.as_part() or merged
        raise ValueError('a ToolCallPartDelta applies to a tool call or a ToolCallPartDelta only')

    def _part(self, name: str, args: _Args, call_id: str | None) -> ToolCallPart:
        extra: _Details = {'provider_name': self.provider_name, 'provider_details': self.provider_details}
        return ToolCallPart(name, args, call_id, **extra) if call_id else ToolCallPart(name, args, **extra)


def _joined_args(old: _Args, new: _Args) -> _Args:
    if isinstance(new, str):
        if isinstance(old, dict):
            raise UnexpectedModelBehavior('a tool call delta adds JSON text to arguments that are a dict')
        return (old or '') + new
    if isinstance(new, dict):
        if isinstance(old, str):
            raise UnexpectedModelBehavior('a tool call delta adds a dict to arguments that are JSON text')
        return {**(old or {}), **new}
    return old
