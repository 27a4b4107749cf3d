"""Messages in the OpenTelemetry GenAI semantic conventions' shape (`gen_ai.input.messages`,
`gen_ai.output.messages`): what Logfire and other backends render as a conversation.

Rules (checked part for part against pydantic-ai 2.62 over random histories):
- each message is `{"role", "parts"}`; a request's parts are grouped by role in order (system
  prompts `system`; user prompts, tool results and retries `user`), a response is one
  `assistant` message with its `finish_reason` when it has one;
- parts: text and thinking `{"type", "content"}`; a tool call `{"type": "tool_call", "id", "name",
  "arguments"}`, its result `{"type": "tool_call_response", "id", "name", "result"}` (a
  provider-executed one also `"builtin": true`); a file by URL `{"type": "uri", "modality",
  "mime_type", "uri"}` (`mime_type` when it is known), inline `{"type": "blob", "mime_type",
  "modality", "content"}` (base64), an uploaded one `{"type": "file", "modality", "mime_type",
  "file_id"}`;
- without `include_content` the same structure is kept (roles, part types, tool names and ids,
  media types) and every value a person or a tool wrote is left out: `content`, `arguments`,
  `result`, `uri` and `file_id`.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import msgspec

from threadline.messages import (
    BinaryContent,
    CachePoint,
    CompactionPart,
    FilePart,
    ModelMessage,
    ModelRequest,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UploadedFile,
    UserPromptPart,
)
from threadline.messages.wire import encoder

__all__ = ['otel_messages', 'system_instructions']

Part = dict[str, Any]


def otel_messages(messages: Sequence[ModelMessage], *, include_content: bool) -> list[dict[str, Any]]:
    """`messages` as GenAI convention messages (see the module docstring)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for role, parts in _by_role(message, include_content):
                out.append({'role': role, 'parts': parts})
            continue
        parts = [p for part in message.parts for p in _response_part(part, include_content)]
        entry: dict[str, Any] = {'role': 'assistant', 'parts': parts}
        if message.finish_reason:
            entry['finish_reason'] = message.finish_reason
        out.append(entry)
    return out


def system_instructions(instructions: str | None) -> list[Part] | None:
    """The `gen_ai.system_instructions` value for a request's instructions (content: only when
    the caller records content)."""
    return [{'type': 'text', 'content': instructions}] if instructions else None


def _by_role(request: ModelRequest, include_content: bool) -> list[tuple[str, list[Part]]]:
    groups: list[tuple[str, list[Part]]] = []
    for part in request.parts:
        role = 'system' if isinstance(part, SystemPromptPart) else 'user'
        converted = _request_part(part, include_content)
        if groups and groups[-1][0] == role:
            groups[-1][1].extend(converted)
        else:
            groups.append((role, converted))
    return groups


def _request_part(part: Any, content: bool) -> list[Part]:
    if isinstance(part, SystemPromptPart):
        return [_text(part.content, content)]
    if isinstance(part, UserPromptPart):
        items = [part.content] if isinstance(part.content, str) else list(part.content)
        return [p for item in items if (p := _user_item(item, content)) is not None]
    if isinstance(part, ToolReturnPart):
        return [_result(part.tool_call_id, part.tool_name, part.content, content)]
    if isinstance(part, RetryPromptPart):  # the legacy part, as it read to the model
        if part.tool_name is None:
            return [_text(part.model_response(), content)]
        return [_result(part.tool_call_id, part.tool_name, part.model_response(), content)]
    if isinstance(part, RetryFeedbackPart):
        return [_text(part.model_response(), content)]
    if isinstance(part, CompactionPart):
        return [_text(part.content, content)] if part.content else []
    return []


def _response_part(part: Any, content: bool) -> list[Part]:
    if isinstance(part, TextPart):
        return [_text(part.content, content)]
    if isinstance(part, ThinkingPart):
        return [{'type': 'thinking', **({'content': part.content} if content else {})}]
    if isinstance(part, (ToolCallPart, NativeToolCallPart)):
        call: Part = {'type': 'tool_call', 'id': part.tool_call_id, 'name': part.tool_name}
        if isinstance(part, NativeToolCallPart):
            call['builtin'] = True
        if content and part.args is not None:
            call['arguments'] = part.args
        return [call]
    if isinstance(part, NativeToolReturnPart):
        result = _result(part.tool_call_id, part.tool_name, part.content, content)
        return [{**result, 'builtin': True}]
    if isinstance(part, FilePart):
        return [_binary(part.content, content)]
    return []


def _text(text: str, content: bool) -> Part:
    return {'type': 'text', 'content': text} if content else {'type': 'text'}


def _result(call_id: str, name: str, result: object, content: bool) -> Part:
    part: Part = {'type': 'tool_call_response', 'id': call_id, 'name': name}
    if content and result is not None:
        part['result'] = _plain(result)
    return part


def _plain(value: object) -> object:
    """A tool's result as JSON values (a file in it as its wire fields), for the span's JSON."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return msgspec.json.decode(encoder.encode(value))


def _user_item(item: object, content: bool) -> Part | None:
    if isinstance(item, str):
        return _text(item, content)
    if isinstance(item, TextContent):
        return _text(item.content, content)
    if isinstance(item, BinaryContent):
        return _binary(item, content)
    if isinstance(item, CachePoint):
        return None
    if isinstance(item, UploadedFile):
        media = item.media_type or 'application/octet-stream'
        part: Part = {'type': 'file', 'modality': _modality_of_media(media) or 'document', 'mime_type': media}
        if content:
            part['file_id'] = item.file_id
        return part
    url = getattr(item, 'url', None)
    if not isinstance(url, str):
        return None
    part = {'type': 'uri'}
    modality = _modality(getattr(item, 'kind', ''))
    if modality:
        part['modality'] = modality
    media_type = getattr(item, 'media_type', None)
    if media_type:  # only when the URL or the caller tells it
        part['mime_type'] = media_type
    if content:
        part['uri'] = url
    return part


def _binary(item: BinaryContent, content: bool) -> Part:
    part: Part = {'type': 'blob', 'mime_type': item.media_type}
    modality = _modality_of_media(item.media_type)
    if modality:
        part['modality'] = modality
    if content:
        part['content'] = base64.b64encode(item.data).decode()
    return part


def _modality(kind: str) -> str | None:
    return {'image-url': 'image', 'audio-url': 'audio', 'video-url': 'video'}.get(kind)


def _modality_of_media(media_type: str) -> str | None:
    major = media_type.split('/', 1)[0]
    return major if major in ('image', 'audio', 'video') else None
