"""A (rendered) history as the Gemini API's `system_instruction` and `contents`, in google-genai's
dict form (`GoogleModel.request_body` hands it to `_google_wire`).

Rules:
- system prompts and the running agent's instructions go in `system_instruction`; Gemini has no
  system role inside `contents`, so a mid-conversation system prompt is rendered (by the shared
  renderer) as `<system>`-tagged user text where it happened;
- user content: text, bytes as `inline_data`, URLs and uploaded files as `file_data` (a file URI
  with its media type); a `CachePoint` is dropped (Gemini caches through `cached_content`);
- a tool result goes as a `function_response` with the call's id: an object as is, any other value
  as `{"return_value": value}`, a failed or retried one as `{"error": "<text>"}` (the key Gemini's
  schema gives errors); the parts after the last `function_response` of a request go in a
  `Content` of their own, because Gemini reads a `Content` holding a `function_response` as the
  model's; a tool's files go inside its `function_response` (`parts`) where the model reads them
  there (Gemini 3 and later: images, PDFs, plain text), else after the request's last
  `function_response`, each framed by the call it came from and referenced in the result;
- a response goes back as a `model` turn: calls as `function_call` with their ids and arguments as
  an object (cut-off arguments as `{"INVALID_JSON": "<raw>"}`), thinking as `thought` text;
- thought signatures go back only to Gemini: kept in a part's `provider_details`
  (`thought_signature`, base64) and returned on that part; a signature on a Gemini `ThinkingPart`
  rides on the part after it; the first call of a turn without one carries Gemini's documented
  `skip_thought_signature_validator`, which Gemini requires;
- a history that starts with a model turn gets an empty user turn first.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any

import msgspec

from threadline.exceptions import UserError
from threadline.messages import (
    BinaryContent,
    CachePoint,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UploadedFile,
    UserPromptPart,
)
from threadline.messages.wire import enc_hook
from threadline.models._base import ModelRequestParameters

__all__ = ['PROVIDER_NAMES', 'map_messages', 'native_file_types']

PROVIDER_NAMES = frozenset({'google', 'google-gla', 'google-vertex', 'google-cloud'})
"""Names a Gemini response may carry in a stored history (older versions used the last three)."""
_SKIP_SIGNATURE = b'skip_thought_signature_validator'


def map_messages(
    messages: Sequence[ModelMessage], params: ModelRequestParameters, *, native_file_types: tuple[str, ...] = ()
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The `system_instruction` parts and the `contents` for a (rendered) history;
    `native_file_types` are the media types the model reads inside a `function_response`."""
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if isinstance(message, ModelRequest):
            parts: list[dict[str, Any]] = []
            tool_files: list[dict[str, Any]] = []
            for j, part in enumerate(message.parts):
                if isinstance(part, SystemPromptPart):
                    system.append({'text': part.content})
                elif isinstance(part, UserPromptPart):
                    parts.extend(_user_parts(part, index, j))
                elif isinstance(part, ToolReturnPart) and part.files:
                    response, framed = _function_response_with_files(part, native_file_types, index, j)
                    parts.append({'function_response': response})
                    tool_files.extend(framed)
                elif isinstance(part, ToolReturnPart):
                    parts.append({'function_response': _function_response(part)})
            if tool_files:  # after the last function_response: a ToolReturn's user content may follow
                last = max(i for i, p in enumerate(parts) if 'function_response' in p) + 1
                parts[last:last] = tool_files
            contents.extend(_split_after_responses(parts))
        else:
            turn = _model_turn(message)
            if turn:
                contents.append({'role': 'model', 'parts': turn})
    if not contents or contents[0]['role'] == 'model':
        contents.insert(0, {'role': 'user', 'parts': [{'text': ''}]})
    if params.instructions:
        system.append({'text': params.instructions})
    return system, contents


def _split_after_responses(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One request as user `Content`s, a new one starting after each run of `function_response`s."""
    out: list[dict[str, Any]] = []
    current: list[dict[str, Any]] = []
    for part in parts:
        if current and 'function_response' in current[-1] and 'function_response' not in part:
            out.append({'role': 'user', 'parts': current})
            current = []
        current.append(part)
    if current:
        out.append({'role': 'user', 'parts': current})
    return out


def _user_parts(part: UserPromptPart, index: int, j: int) -> list[dict[str, Any]]:
    if isinstance(part.content, str):
        return [{'text': part.content}]
    out: list[dict[str, Any]] = []
    for item in part.content:
        if isinstance(item, str):
            out.append({'text': item})
        elif isinstance(item, TextContent):
            out.append({'text': item.content})
        elif isinstance(item, CachePoint):
            continue
        elif isinstance(item, BinaryContent):
            out.append({'inline_data': {'data': item.data, 'mime_type': item.media_type}})
        elif isinstance(item, UploadedFile):
            out.append({'file_data': {'file_uri': item.file_id, 'mime_type': item.media_type}})
        elif hasattr(item, 'url'):
            out.append({'file_data': {'file_uri': item.url, 'mime_type': item.media_type}})
        else:
            raise UserError(f'messages[{index}].parts[{j}]: the google provider cannot take {type(item).__name__}')
    return out


def _function_response(part: ToolReturnPart) -> dict[str, Any]:

    content = part.content
    if part.outcome in ('failed', 'retried'):
        text = content if isinstance(content, str) else msgspec.json.encode(content, enc_hook=enc_hook).decode()
        response: dict[str, Any] = {'error': text}
    else:
        value = msgspec.json.decode(msgspec.json.encode(content, enc_hook=enc_hook))
        if value is None:
            response = {}
        elif isinstance(value, dict) and all(isinstance(k, str) for k in value):
            response = value
        else:
            response = {'return_value': value}
    return {'name': part.tool_name, 'response': response, 'id': part.tool_call_id}


def native_file_types(model_name: str) -> tuple[str, ...]:
    """The media types a Gemini model reads inside a `function_response`: Gemini 3 and later
    (not Gemma, 2.5 or earlier) read images, PDFs and plain text there."""
    if 'gemma' in model_name or not model_name.startswith('gemini-') or _OLDER_GEMINI.match(model_name):
        return ()
    return ('image/png', 'image/jpeg', 'image/webp', 'application/pdf', 'text/plain')


_OLDER_GEMINI = re.compile(r'gemini-(?:1|2)[.-]')


def _function_response_with_files(
    part: ToolReturnPart, native_file_types: tuple[str, ...], index: int, j: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A result holding files: those the model reads in a `function_response` go in its `parts`,
    the others after it, framed by the call they came from and referenced in the result."""
    native: list[dict[str, Any]] = []
    framed: list[dict[str, Any]] = []
    references: list[str] = []
    # The user content the helper builds is (opening tag, file, closing tag) per file, in order.
    _, user_content = part.model_response_str_and_user_content(wrap_if_error=False)
    for opening, file, closing in zip(user_content[::3], user_content[1::3], user_content[2::3], strict=True):
        (mapped,) = _user_parts(UserPromptPart([file]), index, j)
        if file.media_type in native_file_types:
            native.append(mapped)
        else:
            references.append(f'See file {file.identifier}.')
            framed.extend([{'text': opening}, mapped, {'text': closing}])
    if part.outcome in ('failed', 'retried'):
        response: dict[str, Any] = {'error': part.model_response_str(wrap_if_error=False)}
    else:
        response = part.model_response_object(wrap_if_error=False)
        if references:
            response = {'output': [response, *references]}
    out: dict[str, Any] = {'name': part.tool_name, 'response': response, 'id': part.tool_call_id}
    if native:
        out['parts'] = native
    return out, framed


def _signature_of(part: Any, message: ModelResponse) -> bytes | None:
    details = part.provider_details
    if not details or not details.get('thought_signature'):
        return None
    if message.provider_name not in PROVIDER_NAMES and part.provider_name not in PROVIDER_NAMES:
        return None
    return base64.b64decode(details['thought_signature'])


def _model_turn(message: ModelResponse) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    pending: bytes | None = None  # a Gemini ThinkingPart's signature, for the part after it
    first_call = True
    for item in message.parts:
        signature = _signature_of(item, message) if hasattr(item, 'provider_details') else None
        if signature is None and pending is not None:
            signature = pending
        pending = None
        part: dict[str, Any] | None = None
        if isinstance(item, ToolCallPart):
            part = {'function_call': {'name': item.tool_name, 'args': item.args_as_dict(), 'id': item.tool_call_id}}
            if signature is None and first_call:
                signature = _SKIP_SIGNATURE
            first_call = False
        elif isinstance(item, TextPart):
            part = {'text': item.content}
        elif isinstance(item, ThinkingPart):
            if item.provider_name in PROVIDER_NAMES and item.signature:
                pending = base64.b64decode(item.signature)
            if item.content:
                part = {'text': item.content, 'thought': True}
        if part is not None:
            if signature is not None:
                part['thought_signature'] = signature
            parts.append(part)
    return parts
