"""The hash chain over a stored history, and canonical JSON.

Each stored message extends the chain: `link = sha256(previous_link || sha256(canonical(message)))`,
starting from 32 zero bytes. Canonical JSON is the message's wire JSON with keys sorted and no
whitespace, so the chain does not depend on key order or formatting. A batch records the link
after its last message; appending costs O(batch), and re-hashing the stored JSON proves nothing
changed since it was written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import msgspec

__all__ = ['GENESIS', 'canonical_json', 'extend_chain']

GENESIS = '0' * 64
_sorted = msgspec.json.Encoder(order='sorted')
_decode = msgspec.json.Decoder()


def canonical_json(raw: bytes) -> bytes:
    """Sorted-key, whitespace-free JSON of `raw` (any JSON text)."""
    return _sorted.encode(_decode.decode(raw))


def extend_chain(link: str, raw_messages: Iterable[bytes]) -> str:
    """The chain link after appending each message (its stored wire JSON) to `link`."""
    current = bytes.fromhex(link)
    for raw in raw_messages:
        current = hashlib.sha256(current + hashlib.sha256(canonical_json(raw)).digest()).digest()
    return current.hex()
