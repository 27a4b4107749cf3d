"""The hash chain over a stored history, and canonical JSON.

Each stored message extends the chain: `link = sha256(previous_link || sha256(canonical(message)))`,
starting from 32 zero bytes. Canonical JSON is the message's wire JSON with keys sorted and no
whitespace (`messages.wire`), so the chain does not depend on key order or formatting. A write
chains the messages it holds (`extend_chain_messages`: canonical bytes from each message, once);
a check re-hashes the JSON it reads back (`extend_chain`). A batch records the link
after its last message; appending costs O(batch), and re-hashing the stored JSON proves nothing
changed since it was written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from threadline.messages import ModelMessage
from threadline.messages.wire import canonical_bytes, canonical_json

__all__ = ['GENESIS', 'canonical_json', 'extend_chain', 'extend_chain_messages']

GENESIS = '0' * 64


def extend_chain(link: str, raw_messages: Iterable[bytes]) -> str:
    """The chain link after appending each message (its stored wire JSON) to `link`."""
    return _extend(link, (canonical_json(raw) for raw in raw_messages))


def extend_chain_messages(link: str, messages: Iterable[ModelMessage]) -> str:
    """The chain link after appending each message to `link` (the same link `extend_chain` gives
    for their wire JSON, without encoding, decoding and encoding each again)."""
    return _extend(link, (canonical_bytes(message) for message in messages))


def _extend(link: str, canonical: Iterable[bytes]) -> str:
    current = bytes.fromhex(link)
    for body in canonical:
        current = hashlib.sha256(current + hashlib.sha256(body).digest()).digest()
    return current.hex()
