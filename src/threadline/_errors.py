"""What an error may say about itself where message content was not asked for.

An exception's message often carries the data it failed on (`ValueError(f'card {card} declined')`),
so spans, step events and the tool-effect ledger record only:
- the exception's type;
- the length of its message;
- with a key, an HMAC of the message, so two records of the same error can be matched without
  revealing it.
Callers that were asked for content (`include_content=True`) record the message itself.
"""

from __future__ import annotations

from threadline.trust.keys import mac_hex, text_bytes

__all__ = ['error_summary']


def error_summary(error: BaseException, *, key: bytes | None = None) -> str:
    """`ValueError (message: 18 chars, hmac 3f2a9c01d4e5)`: the error without its content."""
    text = str(error)
    parts = [f'message: {len(text)} chars']
    if key is not None:
        parts.append('hmac ' + mac_hex(key, text_bytes(text))[:12])
    return f'{type(error).__name__} ({", ".join(parts)})'
