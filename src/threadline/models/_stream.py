"""Streaming a model response: assembling parts from deltas, and the stream a model hands back."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable, Hashable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from threadline.exceptions import ModelRequestTimeout
from threadline.messages import (
    FinishReason,
    ModelResponse,
    ModelResponsePart,
    NativeToolCallPart,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    RequestUsage,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
)

__all__ = ['ModelStreamEvent', 'PartsManager', 'StreamedResponse']


ModelStreamEvent = PartStartEvent | PartDeltaEvent | PartEndEvent
"""What a model's stream yields: a part starts, grows, ends."""


class PartsManager:
    """Builds a response's parts from a provider's deltas, keyed by the provider's part key.

    Parts are assembled in place (they are not in any history yet); each call returns the event
    to emit: a `PartStartEvent` for a new key, a `PartDeltaEvent` after.
    """

    def __init__(self) -> None:
        self.parts: list[Any] = []
        self._index: dict[Hashable, int] = {}

    def text(self, key: Hashable, content: str) -> PartStartEvent | PartDeltaEvent:
        index = self._index.get(key)
        if index is None:
            self._index[key] = len(self.parts)
            self.parts.append(TextPart(content))
            return PartStartEvent(len(self.parts) - 1, self.parts[-1])
        self.parts[index].content += content
        return PartDeltaEvent(index, TextPartDelta(content))

    def thinking(
        self,
        key: Hashable,
        content: str | None,
        signature: str | None = None,
        provider_name: str | None = None,
        id: str | None = None,
    ) -> PartStartEvent | PartDeltaEvent:
        index = self._index.get(key)
        if index is None:
            self._index[key] = len(self.parts)
            self.parts.append(ThinkingPart(content or '', id=id, signature=signature, provider_name=provider_name))
            return PartStartEvent(len(self.parts) - 1, self.parts[-1])
        part = self.parts[index]
        if content:
            part.content += content
        if signature:
            part.signature = (part.signature or '') + signature
        return PartDeltaEvent(index, ThinkingPartDelta(content, signature))

    def tool_call(
        self, key: Hashable, name: str | None, args: str | None, tool_call_id: str | None
    ) -> PartStartEvent | PartDeltaEvent:
        index = self._index.get(key)
        if index is None:
            self._index[key] = len(self.parts)
            # No arguments yet stays None (a call that never gets any has args=None, as pydantic-ai's).
            part = ToolCallPart(name or '', args, tool_call_id) if tool_call_id else ToolCallPart(name or '', args)
            self.parts.append(part)
            return PartStartEvent(len(self.parts) - 1, part)
        part = self.parts[index]
        if name:
            part.tool_name += name
        if args:
            part.args = (part.args or '') + args if isinstance(part.args, (str, type(None))) else part.args
        if tool_call_id:
            part.tool_call_id = tool_call_id
        return PartDeltaEvent(index, ToolCallPartDelta(name, args, tool_call_id))

    def whole(self, key: Hashable, part: ModelResponsePart) -> PartStartEvent:
        """A part that arrives complete (a built-in tool call or return)."""
        self._index[key] = len(self.parts)
        self.parts.append(part)
        return PartStartEvent(len(self.parts) - 1, part)

    def end_event(self, index: int, following: ModelResponsePart | None) -> PartEndEvent | None:
        """The end of the part at `index`, as `following` starts (None: the response ended);
        only parts that grow by deltas end."""
        part = self.parts[index]
        if not isinstance(part, _GROWING):
            return None
        return PartEndEvent(index, part, next_part_kind=following.part_kind if following is not None else None)


_GROWING = (TextPart, ThinkingPart, ToolCallPart, NativeToolCallPart)


class StreamedResponse:
    """A response arriving as events. Iterate it for `PartStartEvent` / `PartDeltaEvent` /
    `PartEndEvent`; `get()` is the response so far (`state='incomplete'` until the stream ends)."""

    def __init__(self, model_name: str, provider_name: str | None) -> None:
        self.model_name = model_name
        self.provider_name = provider_name
        self.parts = PartsManager()
        self.usage = RequestUsage()
        self.timestamp = datetime.now(tz=UTC)
        self.finish_reason: FinishReason | None = None
        self.provider_response_id: str | None = None
        self.complete = False
        self.deadline: tuple[float, float] | None = None
        """When reading must end (the loop's time) and the `request_timeout` it came from."""
        self.watch: Callable[[RequestUsage], None] | None = None
        """Called with the usage so far after each event (the run checks its token limits here,
        so a limit stops a stream in the middle, not after it)."""

    async def _events(self) -> AsyncIterator[ModelStreamEvent]:  # pragma: no cover - provided by subclasses
        raise NotImplementedError
        yield

    async def __aiter__(self) -> AsyncIterator[ModelStreamEvent]:
        """The model's events, each part ended as the next one starts and the last at the end
        (pydantic-ai 2.62's order); past `deadline`, `ModelRequestTimeout`."""
        last: PartStartEvent | None = None
        events = self._events() if self.deadline is None else self._before_deadline(self.deadline)
        async for event in events:
            if self.watch is not None:
                self.watch(self.usage)
            if isinstance(event, PartStartEvent):
                if last is not None:
                    if (end := self.parts.end_event(last.index, event.part)) is not None:
                        yield end
                    event = replace(event, previous_part_kind=last.part.part_kind)
                last = event
            yield event
        self.complete = True
        if last is not None and (end := self.parts.end_event(last.index, None)) is not None:
            yield end

    async def _before_deadline(self, deadline: tuple[float, float]) -> AsyncIterator[ModelStreamEvent]:
        """The events, each awaited under what is left of `deadline` (loop time, timeout)."""
        at, timeout = deadline
        events = aiter(self._events())
        while True:
            scope = asyncio.timeout_at(at)
            try:
                async with scope:  # around the await only: never across a yield
                    event = await anext(events)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if scope.expired():
                    raise ModelRequestTimeout(self.model_name, timeout) from None
                raise
            yield event

    def get(self) -> ModelResponse:
        return self._as_response(list(self.parts.parts))

    def snapshot(self) -> ModelResponse:
        """The response so far with copies of its parts (the parts themselves keep growing in
        place, and a snapshot a reader keeps must not change under it), `state='incomplete'`
        until the run has recorded it."""
        return self._as_response([copy.copy(part) for part in self.parts.parts], complete=False)

    def _as_response(self, parts: list[Any], *, complete: bool | None = None) -> ModelResponse:
        return ModelResponse(
            parts=parts,
            usage=self.usage,
            model_name=self.model_name,
            timestamp=self.timestamp,
            provider_name=self.provider_name,
            provider_response_id=self.provider_response_id,
            finish_reason=self.finish_reason,
            state='complete' if (self.complete if complete is None else complete) else 'incomplete',
        )


class CompleteResponseStream(StreamedResponse):
    """A whole response replayed as a stream (for models that do not stream)."""

    def __init__(self, response: ModelResponse) -> None:
        super().__init__(response.model_name or '', response.provider_name)
        self._response = response
        self.usage = response.usage
        self.timestamp = response.timestamp
        self.finish_reason = response.finish_reason
        self.provider_response_id = response.provider_response_id

    async def _events(self) -> AsyncIterator[ModelStreamEvent]:
        for index, part in enumerate(self._response.parts):
            yield self.parts.whole(index, part)
