"""What sibling packages need of the message model beyond its public names.

The codec (`encoder`, `enc_hook`, `decode_messages`, `to_python`) writes and reads the wire form
shared with pydantic-ai; stores, providers, the audit and envelopes use it so that bytes written by
one are read by another without a second format.

Canonical bytes are what the hash chain, the store's seals and envelopes digest: the wire JSON
with every object's keys sorted and no whitespace. Rules:
- `canonical_bytes(message)` encodes the message itself with a sorted encoder, once: no wire
  encode, decode and re-encode. It is byte-identical to `canonical_json(encoder.encode(message))`
  (a property test holds it, and chains written before it verify unchanged); content that a
  sorted encoder cannot order (a dict with keys that are not text, inside `Any`-typed content)
  takes that longer path, where the wire form turns the keys into text first.
- `canonical_json(raw)` is the same form of JSON text already written (a stored body). The content kinds (`MULTIMODAL_TYPES`,
`RequestPartBase`, `Base64Bytes`) let them check content without importing private modules.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from threadline.exceptions import MessageValidationError
from threadline.messages._adapter import to_python
from threadline.messages._codec import decode_messages, enc_hook, encoder
from threadline.messages._content import MULTIMODAL_TYPES, Base64Bytes
from threadline.messages._foreign import (
    Bridge,
    ForeignMessage,
    from_pydantic_ai_package,
    own_messages,
    own_run_usage,
    register_bridge,
)
from threadline.messages._json import JSONObject, JSONValue
from threadline.messages._parts import _RequestPart as RequestPartBase
from threadline.messages._repair import SYNTHESIZED_METADATA_KEY

__all__ = [
    'MULTIMODAL_TYPES',
    'SYNTHESIZED_METADATA_KEY',
    'Base64Bytes',
    'Bridge',
    'ForeignMessage',
    'JSONObject',
    'JSONValue',
    'RequestPartBase',
    'canonical_bytes',
    'canonical_json',
    'decode_messages',
    'enc_hook',
    'encode_each',
    'encoder',
    'from_pydantic_ai_package',
    'own_messages',
    'own_run_usage',
    'register_bridge',
    'to_python',
]

_sorted = msgspec.json.Encoder(enc_hook=enc_hook, decimal_format='string', order='sorted')
_plain = msgspec.json.Decoder()


def canonical_json(raw: bytes) -> bytes:
    """Sorted-key, whitespace-free JSON of `raw` (any JSON text)."""
    return _sorted.encode(_plain.decode(raw))


def canonical_bytes(message: object) -> bytes:
    """The canonical bytes of a message (or any wire value), computed from the value itself."""
    try:
        return _sorted.encode(message)
    except TypeError:  # a dict whose keys are not all text: only the wire form makes them text
        return canonical_json(encoder.encode(message))


def encode_each(messages: Sequence[object], name: str = 'messages') -> list[bytes]:
    """Each message's wire JSON, for storing. Text UTF-8 cannot hold (a lone surrogate such as
    `\\ud800`) is a `MessageValidationError` naming the message, never a raw `UnicodeEncodeError`
    from deep inside a store, and never a half-written batch (nothing is written)."""
    out: list[bytes] = []
    for index, message in enumerate(messages):
        try:
            out.append(encoder.encode(message))
        except UnicodeEncodeError:
            raise MessageValidationError(
                f'{name}[{index}]', 'holds a lone surrogate (U+D800..U+DFFF), which UTF-8 text cannot carry'
            ) from None
    return out
