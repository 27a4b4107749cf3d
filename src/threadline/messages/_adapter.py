"""`ModelMessagesTypeAdapter` and the `to_json` / `to_jsonable_python` helpers.

The adapter has the methods of the pydantic `TypeAdapter` the documents use
(`validate_json`, `validate_python`, `dump_json`, `dump_python`) without importing pydantic, so
`import threadline` stays fast. The JSON is pydantic-ai's wire form, field for field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec
from msgspec import UNSET

from threadline.messages._codec import decode_messages, enc_hook, encoder, load_messages
from threadline.messages._content import Base64Bytes
from threadline.messages._messages import ModelMessage
from threadline.messages._opaque import OpaqueContent, OpaquePart

__all__ = ['ModelMessagesTypeAdapter', 'to_json', 'to_jsonable_python', 'to_python']


class _ModelMessagesAdapter:
    """Validates and dumps `list[ModelMessage]` in the wire format shared with pydantic-ai."""

    def validate_json(self, data: str | bytes | bytearray | memoryview, /) -> list[ModelMessage]:
        """Load a history from JSON; raises `MessageValidationError` naming the bad field."""
        return decode_messages(data)

    def validate_python(self, data: Any, /) -> list[ModelMessage]:
        """Load a history from Python data: what `dump_python` (either mode) returns, or messages."""
        return load_messages(data)

    def dump_json(self, messages: Sequence[ModelMessage], /, *, indent: int | None = None) -> bytes:
        """Serialize a history to compact JSON bytes (indented with `indent`)."""
        out = encoder.encode(messages)
        return msgspec.json.format(out, indent=indent) if indent else out

    def dump_python(
        self, messages: Sequence[ModelMessage], /, *, mode: Literal['python', 'json'] = 'python'
    ) -> list[dict[str, Any]]:
        """Dicts for each message. `mode='json'` gives exactly what the JSON form decodes to (ISO
        timestamps, base64 data, lists where the values held tuples); `mode='python'` keeps
        datetimes, bytes and application metadata as they are, so `validate_python(dump_python(h))
        == h` holds exactly."""
        if mode == 'json':
            return msgspec.json.decode(encoder.encode(messages))  # type: ignore[no-any-return]
        return [to_python(m) for m in messages]


ModelMessagesTypeAdapter = _ModelMessagesAdapter()

_FIELDS_CACHE: dict[type, tuple[tuple[tuple[str, str], ...], str | None, Any]] = {}


def _struct_layout(cls: type) -> tuple[tuple[tuple[str, str], ...], str | None, Any]:
    layout = _FIELDS_CACHE.get(cls)
    if layout is None:
        config = cls.__struct_config__  # type: ignore[attr-defined]
        pairs = tuple(zip(cls.__struct_fields__, cls.__struct_encode_fields__, strict=True))  # type: ignore[attr-defined]
        layout = _FIELDS_CACHE[cls] = (pairs, config.tag_field, config.tag)
    return layout


def to_python(value: Any) -> Any:
    """Structs to dicts (wire field names, tag included); every other value kept as it is."""
    if isinstance(value, msgspec.Struct):
        pairs, tag_field, tag = _struct_layout(type(value))
        out: dict[str, Any] = {}
        for name, encode_name in pairs:
            field_value = getattr(value, name)
            if field_value is not UNSET:
                out[encode_name] = to_python(field_value)
        if tag_field:
            out[tag_field] = tag
        return out
    if isinstance(value, list):
        return [to_python(v) for v in value]
    if type(value) is dict:
        return {k: to_python(v) for k, v in value.items()}
    if type(value) is Base64Bytes:
        return bytes(value)
    if isinstance(value, (OpaquePart, OpaqueContent)):
        return dict(value.data)
    return value


def to_jsonable_python(value: Any) -> Any:
    """JSON-compatible Python data for `value`: messages in their wire form, anything else as
    pydantic would make it."""
    return msgspec.to_builtins(value, enc_hook=enc_hook)


def to_json(value: object, *, indent: int | None = None) -> bytes:
    """JSON bytes for `value`: a history in its wire form, anything else as pydantic would write it."""
    out = encoder.encode(value)
    return msgspec.json.format(out, indent=indent) if indent else out
