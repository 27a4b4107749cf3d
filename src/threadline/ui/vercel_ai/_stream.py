"""A run as the Vercel AI SDK's UI message stream: server-sent events whose chunks `useChat` (the `ai`
package's UI message stream reader) assembles into the assistant's `UIMessage`.

Chunks, in order: `start`; for each model response `start-step`, then per part `text-start` /
`text-delta` / `text-end`, `reasoning-start` / `reasoning-delta` / `reasoning-end`, or
`tool-input-start` / `tool-input-delta` / `tool-input-available`; each tool's result as
`tool-output-available` or `tool-output-error`; for a run that paused on calls needing approval, a
`data-approval-requested` chunk per call; `finish-step` after each step; `finish` at the end, then
`[DONE]`. A failed run sends an `error` chunk (its type and message only when the caller asks,
as an exception's text can carry data) and still ends the stream.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import msgspec

from threadline.messages import (
    AgentRunResultEvent,
    AgentStreamEvent,
    FunctionToolResultEvent,
    ModelRequestPart,
    ModelResponsePart,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    RetryPromptPart,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolReturnPart,
)
from threadline.ui._errors import log_failure, public_error

__all__ = ['STREAM_HEADERS', 'sse', 'ui_message_chunks']

STREAM_HEADERS = {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    'x-vercel-ai-ui-message-stream': 'v1',
}


async def ui_message_chunks(
    events: AsyncIterator[AgentStreamEvent | AgentRunResultEvent],
    *,
    message_id: str | None = None,
    error_detail: bool = False,
    request_id: str | None = None,
) -> AsyncIterator[dict[str, Any]]:
    """The UI message stream chunks for a run's events (`agent.run_stream_events(...)`); a failure is
    logged with its type and `request_id` (never its text)."""
    yield {'type': 'start', 'messageId': message_id or str(uuid.uuid4())}
    ids: dict[int, str] = {}
    in_step = False
    try:
        async for event in events:
            if isinstance(event, PartStartEvent) and event.index == 0 and not ids:
                if in_step:
                    yield {'type': 'finish-step'}
                yield {'type': 'start-step'}
                in_step = True
            for chunk in _chunks(event, ids):
                yield chunk
            if isinstance(event, FunctionToolResultEvent):
                ids.clear()  # the next response starts a new step
            if isinstance(event, AgentRunResultEvent):
                for call in getattr(event.result.output, 'approvals', None) or []:
                    # The run paused: this call waits for an approval (a `data-*` part to the client).
                    data = {'toolCallId': call.tool_call_id, 'toolName': call.tool_name}
                    yield {'type': 'data-approval-requested', 'data': data}
                break
    except Exception as error:  # noqa: BLE001 - any failure ends the stream with an error chunk
        log_failure(error, request_id)
        text = public_error(error, detail=error_detail)
        yield {'type': 'error', 'errorText': text}
    if in_step:
        yield {'type': 'finish-step'}
    yield {'type': 'finish'}


def _chunks(event: AgentStreamEvent | AgentRunResultEvent, ids: dict[int, str]) -> list[dict[str, Any]]:
    if isinstance(event, PartStartEvent):
        part = event.part
        ids[event.index] = _part_id(part)
        return _start(part, ids[event.index])
    if isinstance(event, PartDeltaEvent) and event.index in ids:
        return _delta(event.delta, ids[event.index])
    if isinstance(event, PartEndEvent) and event.index in ids:
        return _end(event.part, ids[event.index])
    if isinstance(event, FunctionToolResultEvent):
        return _result(event.part)
    return []


def _part_id(part: ModelResponsePart) -> str:
    return part.tool_call_id if isinstance(part, ToolCallPart) else str(uuid.uuid4())


def _start(part: ModelResponsePart, pid: str) -> list[dict[str, Any]]:
    if isinstance(part, TextPart):
        out = [{'type': 'text-start', 'id': pid}]
        return out + ([{'type': 'text-delta', 'id': pid, 'delta': part.content}] if part.content else [])
    if isinstance(part, ThinkingPart):
        out = [{'type': 'reasoning-start', 'id': pid}]
        return out + ([{'type': 'reasoning-delta', 'id': pid, 'delta': part.content}] if part.content else [])
    if isinstance(part, ToolCallPart):
        out = [{'type': 'tool-input-start', 'toolCallId': pid, 'toolName': part.tool_name}]
        args = part.args if isinstance(part.args, str) else None
        return out + ([{'type': 'tool-input-delta', 'toolCallId': pid, 'inputTextDelta': args}] if args else [])
    return []


def _delta(delta: TextPartDelta | ThinkingPartDelta | ToolCallPartDelta, pid: str) -> list[dict[str, Any]]:
    if isinstance(delta, TextPartDelta) and delta.content_delta:
        return [{'type': 'text-delta', 'id': pid, 'delta': delta.content_delta}]
    if isinstance(delta, ThinkingPartDelta) and delta.content_delta:
        return [{'type': 'reasoning-delta', 'id': pid, 'delta': delta.content_delta}]
    if isinstance(delta, ToolCallPartDelta) and isinstance(delta.args_delta, str) and delta.args_delta:
        return [{'type': 'tool-input-delta', 'toolCallId': pid, 'inputTextDelta': delta.args_delta}]
    return []


def _end(part: ModelResponsePart, pid: str) -> list[dict[str, Any]]:
    if isinstance(part, TextPart):
        return [{'type': 'text-end', 'id': pid}]
    if isinstance(part, ThinkingPart):
        return [{'type': 'reasoning-end', 'id': pid}]
    if isinstance(part, ToolCallPart):
        return [
            {
                'type': 'tool-input-available',
                'toolCallId': pid,
                'toolName': part.tool_name,
                'input': part.args_as_dict(),
            }
        ]
    return []


def _result(part: ModelRequestPart) -> list[dict[str, Any]]:
    if isinstance(part, RetryPromptPart) or (
        isinstance(part, ToolReturnPart) and part.outcome in ('failed', 'retried')
    ):
        text = part.content if isinstance(part.content, str) else json.dumps(part.content, default=str)
        return [{'type': 'tool-output-error', 'toolCallId': part.tool_call_id, 'errorText': text}]
    if isinstance(part, ToolReturnPart):
        return [{'type': 'tool-output-available', 'toolCallId': part.tool_call_id, 'output': _jsonable(part.content)}]
    return []


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


_encoder = msgspec.json.Encoder()


async def sse(chunks: AsyncIterator[dict[str, Any]]) -> AsyncIterator[str]:
    """The chunks as server-sent events, ending with `[DONE]`. Encoded by msgspec, so a chunk
    may carry finished JSON as `msgspec.Raw` (the stateless history), written as it is."""
    async for chunk in chunks:
        yield f'data: {_encoder.encode(chunk).decode()}\n\n'
    yield 'data: [DONE]\n\n'
