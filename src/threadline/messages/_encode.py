"""Encoding what msgspec does not know natively, for the codec and for tool returns' text."""

from __future__ import annotations

from typing import Any

import msgspec

from threadline.messages._content import Base64Bytes
from threadline.messages._opaque import OpaqueContent, OpaquePart

__all__ = ['enc_hook', 'json_encoder', 'jsonable']


def enc_hook(obj: Any) -> Any:
    """Encode what msgspec does not know natively: URL-safe base64 data, opaque parts, and (for
    application `metadata`) anything pydantic knows how to make JSON-compatible."""
    from pydantic_core import to_jsonable_python

    if isinstance(obj, Base64Bytes):
        return obj.encode_text()
    if isinstance(obj, (OpaquePart, OpaqueContent)):
        return obj.data
    return to_jsonable_python(obj)


json_encoder = msgspec.json.Encoder(enc_hook=enc_hook, decimal_format='string')
"""The encoder for text a model reads (tool results, feedback): `enc_hook`, decimals as strings."""


def jsonable(value: Any) -> Any:
    """`value` as plain JSON data (dicts, lists, strings, numbers), as the model would read it."""
    return msgspec.json.decode(json_encoder.encode(value))
