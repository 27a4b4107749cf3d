"""The one MAC of Threadline: HMAC-SHA256, and comparing tags in constant time.

Every keyed digest (envelopes, store seals, the audit's keyed hashes, error summaries) is computed
here, so the algorithm, the encoding of text and the comparison are decided once. Rules:
- text is encoded as UTF-8 with `surrogatepass`, so any Python string has exactly one byte form;
- tags are compared with `hmac.compare_digest`, never `==`;
- no function here logs, raises with, or returns anything derived from the key but the tag.
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = ['mac', 'mac_hex', 'same_tag', 'text_bytes']


def text_bytes(text: str) -> bytes:
    """The one byte form of `text` that MACs are computed over."""
    return text.encode('utf-8', 'surrogatepass')


def mac(key: bytes, message: bytes) -> bytes:
    """HMAC-SHA256 of `message` under `key`."""
    return hmac.new(key, message, hashlib.sha256).digest()


def mac_hex(key: bytes, message: bytes) -> str:
    """HMAC-SHA256 of `message` under `key`, as lowercase hex."""
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def same_tag(expected: str | bytes, given: str | bytes) -> bool:
    """Whether two tags (or secrets) are equal, in time that does not depend on where they differ."""
    a = text_bytes(expected) if isinstance(expected, str) else expected
    b = text_bytes(given) if isinstance(given, str) else given
    return hmac.compare_digest(a, b)
