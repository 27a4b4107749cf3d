"""A run as AG-UI events (the `ag-ui-protocol` package's event types, encoded by its `EventEncoder`).

Events, in order: `RUN_STARTED`; per part of each model response `TEXT_MESSAGE_START` / `_CONTENT` /
`_END`, `REASONING_START`, `REASONING_MESSAGE_START` / `_CONTENT` / `_END`, `REASONING_END`, or
`TOOL_CALL_START` / `_ARGS` / `_END`; each tool's result as `TOOL_CALL_RESULT`; at the end a
`MESSAGES_SNAPSHOT` of the whole history (as `AGUIAdapter.dump_messages` gives it) and
`RUN_FINISHED`. The snapshot keeps the ids of the messages the client sent (`client_messages`),
so the client's `runAgent().newMessages`, which compares ids, lists only what the run added: the
client's last message is the run's first new one, and those before it pair up backwards with the
history while their roles agree (a client that sent only its new message keeps that one's id). A failed run sends `RUN_ERROR` (its type and message only when the caller asks, as
an exception's text can carry data) and ends there.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from threadline.messages import (
    AgentRunResultEvent,
    AgentStreamEvent,
    FunctionToolResultEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    RetryPromptPart,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolReturnPart,
)
from threadline.ui._errors import log_failure, public_error
from threadline.ui.ag_ui._adapter import AGUIAdapter, _text
from threadline.ui.ag_ui._wire import event_sse

if TYPE_CHECKING:
    from ag_ui.core import BaseEvent, Message  # the extra `ui`: imported when a stream runs

__all__ = ['ag_ui_events', 'encode']


async def ag_ui_events(
    events: AsyncIterator[AgentStreamEvent | AgentRunResultEvent],
    *,
    thread_id: str,
    run_id: str,
    error_detail: bool = False,
    client_messages: Sequence[object] = (),
    request_id: str | None = None,
) -> AsyncIterator[BaseEvent]:
    """The AG-UI events for a run's events (`agent.run_stream_events(...)`); `client_messages`:
    the messages of the client's `RunAgentInput`, whose ids the final snapshot keeps. A failure is
    logged with its type and `request_id` (never its text)."""
    from ag_ui.core import MessagesSnapshotEvent, RunErrorEvent, RunFinishedEvent, RunStartedEvent

    yield RunStartedEvent(thread_id=thread_id, run_id=run_id)
    ids: dict[int, str] = {}
    try:
        async for event in events:
            if isinstance(event, AgentRunResultEvent):
                history = event.result.all_messages()
                cut = len(history) - len(event.result.new_messages())
                # Each message dumps on its own, so the two halves make the whole snapshot.
                before = AGUIAdapter.dump_messages(history[:cut])
                snapshot = before + AGUIAdapter.dump_messages(history[cut:])
                yield MessagesSnapshotEvent(messages=_with_client_ids(snapshot, len(before), client_messages))
                break
            for out in _events(event, ids):
                yield out
            if isinstance(event, FunctionToolResultEvent):
                ids.clear()
    except Exception as error:  # noqa: BLE001 - any failure ends the run with RUN_ERROR
        log_failure(error, request_id)
        yield RunErrorEvent(message=public_error(error, detail=error_detail))
        return
    yield RunFinishedEvent(thread_id=thread_id, run_id=run_id)


def _events(event: AgentStreamEvent, ids: dict[int, str]) -> list[BaseEvent]:
    from ag_ui import core

    if isinstance(event, PartStartEvent):
        part = event.part
        pid = ids[event.index] = part.tool_call_id if isinstance(part, ToolCallPart) else str(uuid.uuid4())
        if isinstance(part, TextPart):
            out: list[BaseEvent] = [core.TextMessageStartEvent(message_id=pid, role='assistant')]
            return out + ([core.TextMessageContentEvent(message_id=pid, delta=part.content)] if part.content else [])
        if isinstance(part, ThinkingPart):
            out = [
                core.ReasoningStartEvent(message_id=pid),
                core.ReasoningMessageStartEvent(message_id=pid, role='reasoning'),
            ]
            return out + (
                [core.ReasoningMessageContentEvent(message_id=pid, delta=part.content)] if part.content else []
            )
        if isinstance(part, ToolCallPart):
            return [core.ToolCallStartEvent(tool_call_id=pid, tool_call_name=part.tool_name)]
        return []
    if isinstance(event, PartDeltaEvent) and event.index in ids:
        pid, delta = ids[event.index], event.delta
        if isinstance(delta, TextPartDelta) and delta.content_delta:
            return [core.TextMessageContentEvent(message_id=pid, delta=delta.content_delta)]
        if isinstance(delta, ThinkingPartDelta) and delta.content_delta:
            return [core.ReasoningMessageContentEvent(message_id=pid, delta=delta.content_delta)]
        return []  # tool arguments go whole at the part's end
    if isinstance(event, PartEndEvent) and event.index in ids:
        pid, part = ids[event.index], event.part
        if isinstance(part, TextPart):
            return [core.TextMessageEndEvent(message_id=pid)]
        if isinstance(part, ThinkingPart):
            return [core.ReasoningMessageEndEvent(message_id=pid), core.ReasoningEndEvent(message_id=pid)]
        if isinstance(part, ToolCallPart):
            return [
                core.ToolCallArgsEvent(tool_call_id=pid, delta=part.args_as_json_str()),
                core.ToolCallEndEvent(tool_call_id=pid),
            ]
        return []
    if isinstance(event, FunctionToolResultEvent) and isinstance(event.part, (ToolReturnPart, RetryPromptPart)):
        result = event.part
        return [
            core.ToolCallResultEvent(
                message_id=str(uuid.uuid4()),
                tool_call_id=result.tool_call_id,
                content=_text(result.content),
                role='tool',
            )
        ]
    return []


def _with_client_ids(snapshot: list[Message], first_new: int, client: Sequence[object]) -> list[Message]:
    """`snapshot` with the client's own ids (see the module docstring)."""
    sent = [(m.get('id'), m.get('role')) for m in client if isinstance(m, dict)]
    for back, (given, role) in enumerate(reversed(sent)):
        at = first_new - back
        if not isinstance(given, str) or at < 0 or at >= len(snapshot) or snapshot[at].role != role:
            break
        snapshot[at] = snapshot[at].model_copy(update={'id': given})
    return snapshot


def encode(event: BaseEvent) -> str:
    """One event as a server-sent event, as the protocol package's own encoder writes it (a
    messages snapshot is written in one pass, `_wire`)."""
    from ag_ui.core import MessagesSnapshotEvent
    from ag_ui.encoder import EventEncoder

    if type(event) is MessagesSnapshotEvent:
        return event_sse(event)
    return EventEncoder().encode(event)
