"""The JSON form of a history: encoding, a fast typed decoder, and a careful fallback loader.

Loading takes one of two paths:

- the fast path decodes the whole document straight into message structs with msgspec, in C,
  for a history in the current shape (what Threadline and pydantic-ai 2.62 write);
- anything it rejects goes to the careful path, which parses the JSON once more and loads message
  by message, part by part. It accepts what the fast path does not (legacy field aliases, parts
  and content kinds from a newer writer, unknown fields, lax scalar types) and, when the input
  really is invalid, raises `MessageValidationError` naming the message index, part index and
  field. Nothing is returned on error, so nothing is ever half-loaded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import wraps
from typing import Any, ParamSpec, TypeVar

import msgspec

from threadline.exceptions import MessageValidationError
from threadline.messages._base import LEGACY_PREFIX, LegacyName
from threadline.messages._content import (
    FILE_URL_KINDS,
    LOADING,
    Base64Bytes,
    BinaryContent,
    CachePoint,
    TextContent,
    UploadedFile,
)
from threadline.messages._encode import enc_hook
from threadline.messages._messages import ModelMessage, ModelRequest, ModelResponse
from threadline.messages._opaque import OpaqueContent, OpaquePart
from threadline.messages._parts import (
    CompactionPart,
    FilePart,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolAvailabilityDeltaPart,
    ToolCallPart,
    ToolReturnContent,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.messages._tool_content import MAX_NESTING, rehydrate_tool_content
from threadline.messages._usage import RequestUsage, RunUsage

__all__ = ['decode_messages', 'dec_hook', 'enc_hook', 'encoder', 'load_messages', 'load_struct']


def dec_hook(tp: Any, obj: Any) -> Any:
    """Decode the two custom wire types (tool-return content and base64 file data), and refuse
    every legacy name, so its message goes to the careful loader (see `LegacyName`)."""
    if tp is LegacyName:
        raise ValueError('a legacy field name (renamed by the careful loader)')
    if tp is ToolReturnContent:
        return rehydrate_tool_content(obj, dec_hook)
    if tp is Base64Bytes:
        if type(obj) is str:
            return Base64Bytes.decode_text(obj)
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return Base64Bytes(obj)
        raise TypeError(f'expected base64 text or bytes, got {type(obj).__name__}')
    raise NotImplementedError(f'no decoder for {tp!r}')


encoder = msgspec.json.Encoder(enc_hook=enc_hook, decimal_format='string')
_decoder = msgspec.json.Decoder(list[ModelMessage], dec_hook=dec_hook)
_message_decoder = msgspec.json.Decoder(ModelMessage, dec_hook=dec_hook)
_raw_items = msgspec.json.Decoder(list[msgspec.Raw])
_PART_TYPES_REQUEST: dict[str, type[msgspec.Struct]] = {
    cls.part_kind: cls
    for cls in (
        SystemPromptPart,
        UserPromptPart,
        ToolReturnPart,
        RetryFeedbackPart,
        RetryPromptPart,
        CompactionPart,
        ToolAvailabilityDeltaPart,
    )
}
_PART_TYPES_RESPONSE: dict[str, type[msgspec.Struct]] = {
    cls.part_kind: cls
    for cls in (
        TextPart,
        ThinkingPart,
        ToolCallPart,
        NativeToolCallPart,
        NativeToolReturnPart,
        FilePart,
        CompactionPart,
    )
}
_CONTENT_TYPES: dict[str, type[msgspec.Struct]] = {
    **FILE_URL_KINDS,
    'text-content': TextContent,
    'binary': BinaryContent,
    'uploaded-file': UploadedFile,
    'cache-point': CachePoint,
}
_ALIASES: dict[type, dict[str, str]] = {
    ModelResponse: {'vendor_details': 'provider_details', 'vendor_id': 'provider_response_id'},
    ToolAvailabilityDeltaPart: {'added': 'tools_added'},
    RequestUsage: {'request_tokens': 'input_tokens', 'response_tokens': 'output_tokens'},
    RunUsage: {'request_tokens': 'input_tokens', 'response_tokens': 'output_tokens'},
}
_ENCODE_NAMES: dict[type, frozenset[str]] = {}


P = ParamSpec('P')
R = TypeVar('R')


def _loading(load: Callable[P, R]) -> Callable[P, R]:
    """`load` with `LOADING` set, so the image bytes it loads are `BinaryImage`s."""

    @wraps(load)
    def loading(*args: P.args, **kwargs: P.kwargs) -> R:
        token = LOADING.set(True)
        try:
            return load(*args, **kwargs)
        finally:
            LOADING.reset(token)

    return loading


@_loading
def decode_messages(data: bytes | bytearray | memoryview | str) -> list[ModelMessage]:
    """Load a JSON history: the fast typed decoder first, the careful loader for anything else."""
    try:
        return _decoder.decode(data)
    except Exception:  # noqa: BLE001 - every failure is re-examined by the careful loader
        pass
    try:
        items = _raw_items.decode(data)
    except (msgspec.DecodeError, TypeError, RecursionError):
        pass  # not a JSON list, or nested too deeply: the checks below say which
    else:
        # Fall back per message, not per document: one odd message (an unknown key, a legacy
        # alias, a float where an int belongs) costs its own careful load, not the history's.
        return [_decode_one(raw, index) for index, raw in enumerate(items)]
    if isinstance(data, (bytes, bytearray, memoryview, str)) and json_depth(data) > MAX_JSON_DEPTH:
        raise MessageValidationError('messages', f'JSON nested deeper than {MAX_JSON_DEPTH} levels (the limit)')
    try:
        parsed = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise MessageValidationError('messages', f'invalid JSON: {exc}') from None
    except TypeError as exc:
        raise MessageValidationError('messages', f'expected JSON text or bytes: {exc}') from None
    return load_messages(parsed)


def _decode_one(raw: msgspec.Raw, index: int) -> ModelMessage:
    try:
        return _message_decoder.decode(raw)
    except Exception:  # noqa: BLE001 - re-examined by the careful loader, which names what is wrong
        pass
    if json_depth(raw) > MAX_JSON_DEPTH - 1:  # the message sits one level inside the history's list
        raise MessageValidationError('messages', f'JSON nested deeper than {MAX_JSON_DEPTH} levels (the limit)')
    try:
        item = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise MessageValidationError(f'messages[{index}]', f'invalid JSON: {exc}') from None
    return _load_message_bounded(item, f'messages[{index}]')


MAX_JSON_DEPTH = MAX_NESTING + 8
"""How deeply a history's JSON may nest: the content limit plus the levels of the message format."""
_JSON_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def json_depth(data: bytes | bytearray | memoryview | str | msgspec.Raw) -> int:
    """The deepest nesting of lists and objects in `data` (strings skipped), counted without
    recursion; stops counting once past `MAX_JSON_DEPTH`."""
    raw = data.encode('utf-8', 'surrogatepass') if isinstance(data, str) else bytes(data)
    depth = deepest = 0
    for token in _JSON_TOKENS.finditer(raw):
        char = token.group()[:1]
        if char in b'[{':
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_JSON_DEPTH:
                    break
        elif char in b']}':
            depth -= 1
    return deepest


@_loading
def load_messages(items: object) -> list[ModelMessage]:
    """Load a history from Python objects (dicts as `dump_python` writes them, or messages)."""
    if isinstance(items, (str, bytes, dict)) or not isinstance(items, (list, tuple)):
        raise MessageValidationError('messages', f'expected a list of messages, got {_type_name(items)}')
    return [_load_message_bounded(item, f'messages[{i}]') for i, item in enumerate(items)]


def _load_message_bounded(item: object, loc: str) -> ModelMessage:
    try:
        return _load_message(item, loc)
    except RecursionError:
        # Python objects nested beyond what the interpreter can walk: the same answer as for JSON.
        raise MessageValidationError(loc, f'nested deeper than {MAX_JSON_DEPTH} levels (the limit)') from None


@_loading
def load_struct(cls: type, value: object, location: str) -> Any:
    """Load one wire struct of type `cls` (a message, part, content item or usage) from Python data."""
    if isinstance(value, cls):
        return value
    if cls is ModelRequest or cls is ModelResponse:
        message = _load_message(value, location)
        if not isinstance(message, cls):
            raise MessageValidationError(f'{location}.kind', f'expected {cls.kind!r}, got the other kind')
        return message
    for table in (_PART_TYPES_REQUEST, _PART_TYPES_RESPONSE):
        if table.get(getattr(cls, 'part_kind', None)) is cls:  # type: ignore[arg-type]
            return _load_part(value, location, {cls.part_kind: cls})  # type: ignore[attr-defined]
    return _convert(_known_fields(cls, _require_dict(value, location)), cls, location)


def _load_message(item: object, loc: str) -> ModelMessage:
    if isinstance(item, (ModelRequest, ModelResponse)):
        return item
    data = _require_dict(item, loc)
    kind = data.get('kind')
    if kind == 'request':
        cls: type[ModelRequest] | type[ModelResponse] = ModelRequest
        part_types = _PART_TYPES_REQUEST
    elif kind == 'response':
        cls = ModelResponse
        part_types = _PART_TYPES_RESPONSE
    elif 'kind' not in data:
        raise MessageValidationError(f'{loc}.kind', "field required (expected 'request' or 'response')")
    else:
        raise MessageValidationError(f'{loc}.kind', "unknown message kind (expected 'request' or 'response')")
    if 'parts' not in data:
        raise MessageValidationError(f'{loc}.parts', 'field required')
    raw_parts = data['parts']
    if not isinstance(raw_parts, (list, tuple)):
        raise MessageValidationError(f'{loc}.parts', f'expected a list of parts, got {_type_name(raw_parts)}')
    parts = [_load_part(part, f'{loc}.parts[{j}]', part_types) for j, part in enumerate(raw_parts)]
    fields = _known_fields(cls, data)
    if cls is ModelResponse and isinstance(fields.get('usage'), dict):
        # Older histories wrote null for counters they did not measure (`request_tokens: null`,
        # `details: null`): null means "not counted", which the defaults already say.
        fields['usage'] = {k: v for k, v in _known_fields(RequestUsage, fields['usage']).items() if v is not None}
    fields['parts'] = []
    message: ModelMessage = _convert(fields, cls, loc)
    msgspec.Struct.__setattr__(message, 'parts', parts)  # a new message: not a reassignment to count
    return message


def _load_part(part: object, loc: str, part_types: dict[str, type[msgspec.Struct]]) -> Any:
    if isinstance(part, OpaquePart) or type(part) in part_types.values():
        return part
    data = _require_dict(part, loc)
    tag = data.get('part_kind')
    if not isinstance(tag, str):
        raise MessageValidationError(f'{loc}.part_kind', 'field required' if tag is None else 'expected a string')
    cls = part_types.get(tag)
    if cls is None:
        if tag in _PART_TYPES_REQUEST or tag in _PART_TYPES_RESPONSE:
            where = 'a response' if part_types is _PART_TYPES_RESPONSE else 'a request'
            raise MessageValidationError(f'{loc}.part_kind', f'a {tag!r} part cannot appear in {where}')
        return OpaquePart(dict(data))
    fields = _known_fields(cls, data)
    items = None
    if cls is UserPromptPart and isinstance(fields.get('content'), (list, tuple)):
        items = [_load_content(item, f'{loc}.content[{k}]') for k, item in enumerate(fields['content'])]
        fields['content'] = ''
    loaded = _convert(fields, cls, loc)
    if items is not None:
        loaded.content = items
    return loaded


def _load_content(item: object, loc: str) -> Any:
    if isinstance(item, (str, OpaqueContent)) or type(item) in _CONTENT_TYPES.values():
        return item
    data = _require_dict(item, loc)
    kind = data.get('kind')
    if not isinstance(kind, str):
        raise MessageValidationError(f'{loc}.kind', 'field required' if kind is None else 'expected a string')
    cls = _CONTENT_TYPES.get(kind)
    if cls is None:
        return OpaqueContent(dict(data))
    return _convert(_known_fields(cls, data), cls, loc)


def _known_fields(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """The entries of `data` that `cls` declares (plus its tag), with legacy aliases renamed."""
    names = _ENCODE_NAMES.get(cls)
    if names is None:
        config = cls.__struct_config__  # type: ignore[attr-defined]
        tag = (config.tag_field,) if config.tag_field else ()
        pairs = zip(cls.__struct_fields__, cls.__struct_encode_fields__, strict=True)  # type: ignore[attr-defined]
        kept = (wire for name, wire in pairs if not name.startswith(LEGACY_PREFIX))
        names = _ENCODE_NAMES[cls] = frozenset((*kept, *tag))
    aliases = _ALIASES.get(cls)
    out: dict[str, Any] = {}
    for key, value in data.items():
        if aliases and key in aliases and aliases[key] not in data:
            out[aliases[key]] = value
        elif key in names:
            out[key] = value
    return out


_MSGSPEC_ERROR = re.compile(r'^(?P<reason>.*?)(?: - at `\$(?P<path>[^`]*)`)?$', re.S)
_MISSING = re.compile(r'^Object missing required field `(?P<field>[^`]+)`$')
_ENUM_VALUE = re.compile(r'(Invalid enum value)\b.*', re.S)


def _convert(data: dict[str, Any], cls: type, loc: str) -> Any:
    try:
        return msgspec.convert(data, cls, dec_hook=dec_hook, strict=False)
    except msgspec.ValidationError as exc:
        raise _translate(str(exc), loc) from None
    except (ValueError, TypeError) as exc:
        raise MessageValidationError(loc, str(exc)) from None


def _translate(message: str, loc: str) -> MessageValidationError:
    match = _MSGSPEC_ERROR.match(message)
    reason, path = (match['reason'], match['path'] or '') if match else (message, '')
    location = loc + path
    missing = _MISSING.match(reason)
    if missing:
        return MessageValidationError(f'{location}.{missing["field"]}', 'field required')
    reason = _ENUM_VALUE.sub(r'\1', reason.replace('`', ''))  # where the value is, never what it is
    return MessageValidationError(location, reason[:1].lower() + reason[1:])


def _require_dict(value: object, loc: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MessageValidationError(loc, f'expected an object, got {_type_name(value)}')
    return value


def _type_name(value: object) -> str:
    names: dict[type, str] = {dict: 'an object', list: 'a list', str: 'a string', type(None): 'null', bool: 'a boolean'}
    for tp, name in names.items():
        if isinstance(value, tp):
            return name
    if isinstance(value, (int, float)):
        return 'a number'
    return type(value).__name__
