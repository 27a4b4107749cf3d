"""Injecting messages into a running agent: `RunContext.enqueue` and `AgentRun.enqueue`.

Rules:
- items are user content (adjacent items gather into one `UserPromptPart`; a single string stays a
  string), `ModelRequestPart`s (a `SystemPromptPart` stays where it lands, as a mid-conversation
  system prompt), or complete `ModelRequest` / `ModelResponse` messages; adjacent part-style items
  coalesce into one request; the content must end in a request;
- `'asap'` content is delivered before the next model request, or, if the run would end, redirects
  it into one more request; `'when_idle'` content only when the run would otherwise end, after
  `'asap'` content;
- parts-only content enqueued from inside a tool lands right after that tool's result, in the same
  request; everything else is appended as its own message(s);
- every way of driving a run delivers (`run`, `run.next()`, a bare `async for`), so queued content
  is never silently lost; `UndrainedPendingMessagesError` exists for `except` clauses but is never
  raised: a run ends only once both queues are empty;
- `enqueue` must be called on the run's event loop; from another thread use
  `loop.call_soon_threadsafe(agent_run.enqueue, ...)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec

from threadline._uuid import uuid7
from threadline.exceptions import UserError
from threadline.messages import (
    AgentStreamEvent,
    CachePoint,
    EnqueuedMessagesEvent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextContent,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.messages import CompactionPart as _CompactionPart
from threadline.messages.wire import MULTIMODAL_TYPES, RequestPartBase

__all__ = ['EnqueueQueue', 'Priority']

Priority = Literal['asap', 'when_idle']
_USER_CONTENT = (str, TextContent, CachePoint, *MULTIMODAL_TYPES)


@dataclass
class _Entry:
    enqueue_id: str
    messages: list[ModelMessage]
    tool_call_id: str | None


def _coalesce(items: Sequence[Any]) -> list[ModelMessage]:
    messages: list[ModelMessage] = []
    parts: list[Any] = []
    content: list[Any] = []

    def flush_content() -> None:
        if content:
            parts.append(
                UserPromptPart(content[0] if len(content) == 1 and isinstance(content[0], str) else list(content))
            )
            content.clear()

    def flush_parts() -> None:
        flush_content()
        if parts:
            messages.append(ModelRequest(parts=list(parts)))
            parts.clear()

    for index, item in enumerate(items):
        if isinstance(item, _USER_CONTENT):
            content.append(item)
        elif isinstance(item, (RequestPartBase, _CompactionPart)):
            flush_content()
            parts.append(item)
        elif isinstance(item, (ModelRequest, ModelResponse)):
            flush_parts()
            messages.append(item)
        else:
            raise UserError(
                f'enqueue item {index} is a {type(item).__name__}: enqueue user content, request parts, or complete '
                'ModelRequest / ModelResponse messages'
            )
    flush_parts()
    if not isinstance(messages[-1], ModelRequest):
        raise UserError(
            'Enqueued content must end with a `ModelRequest` (or request content), so the agent has '
            'something to respond to.'
        )
    return messages


class EnqueueQueue:
    """The two queues of a run and their delivery into its history."""

    def __init__(self) -> None:
        self.asap: list[_Entry] = []
        self.when_idle: list[_Entry] = []
        self.closed = False
        self.refused: str | None = None  # why this run takes no enqueued content (a capability says)
        self._spliced: dict[str, int] = {}

    def put(self, items: Sequence[Any], *, priority: str, tool_call_id: str | None) -> str | None:
        if priority not in ('asap', 'when_idle'):
            raise UserError(f"enqueue priority must be 'asap' or 'when_idle', not {priority!r}")
        if self.closed:
            raise UserError('`enqueue` is not available because the agent run has ended.')
        if self.refused is not None:
            raise UserError(self.refused)
        if not items:
            return None
        messages = _coalesce(items)
        parts_only = all(isinstance(i, (*_USER_CONTENT, RequestPartBase, _CompactionPart)) for i in items)
        entry = _Entry(uuid7(), messages, tool_call_id if parts_only else None)
        (self.asap if priority == 'asap' else self.when_idle).append(entry)
        return entry.enqueue_id

    def deliver(
        self,
        history: list[ModelMessage],
        stamp: Callable[[ModelMessage], ModelMessage],
        events: list[AgentStreamEvent] | None,
        *,
        idle: bool,
    ) -> list[ModelMessage]:
        """Deliver the asap queue (and the when-idle queue if `idle`) into `history`; returns the
        messages appended (spliced content adds none)."""
        entries, self.asap = self.asap, []
        if idle:
            entries += self.when_idle
            self.when_idle = []
        appended: list[ModelMessage] = []
        for entry in entries:
            if entry.tool_call_id is not None and not idle and self._splice(history, entry, events):
                continue
            for message in entry.messages:
                if isinstance(message, ModelRequest) and message.timestamp is None:
                    message.timestamp = datetime.now(tz=UTC)  # delivered now, as a request the run sends
                history.append(stamp(message))
                appended.append(message)
            if events is not None:
                events.append(EnqueuedMessagesEvent(entry.enqueue_id, tuple(entry.messages)))
        return appended

    def _splice(self, history: list[ModelMessage], entry: _Entry, events: list[AgentStreamEvent] | None) -> bool:
        call_id = entry.tool_call_id
        for index in range(len(history) - 1, -1, -1):
            message = history[index]
            if not isinstance(message, ModelRequest):
                continue
            at = next(
                (j for j, p in enumerate(message.parts) if isinstance(p, ToolReturnPart) and p.tool_call_id == call_id),
                None,
            )
            if at is None:
                continue
            delivered: list[Any] = [p for m in entry.messages for p in m.parts]
            position = at + 1 + self._spliced.get(f'{id(message)}:{call_id}', 0)
            parts = list(message.parts)
            parts[position:position] = delivered
            replaced = msgspec.structs.replace(message, parts=parts)
            history[index] = replaced
            self._spliced[f'{id(replaced)}:{call_id}'] = self._spliced.pop(f'{id(message)}:{call_id}', 0) + len(
                delivered
            )
            if events is not None:
                events.append(
                    EnqueuedMessagesEvent(entry.enqueue_id, (ModelRequest(parts=list(delivered)),), tuple(delivered))
                )
            return True
        return False

    def empty(self) -> bool:
        return not self.asap and not self.when_idle
