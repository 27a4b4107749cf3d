"""UUIDv7 ids for runs and conversations: time-ordered, so ids sort by creation (RFC 9562)."""

from __future__ import annotations

import os
import time

__all__ = ['uuid7']

_last_ms = 0
_counter = 0


def uuid7() -> str:
    """A new UUIDv7 string; ids made in the same millisecond stay in creation order."""
    global _last_ms, _counter
    ms = time.time_ns() // 1_000_000
    if ms > _last_ms:
        _last_ms = ms
        _counter = int.from_bytes(os.urandom(2), 'big') & 0x7FF
    else:
        _counter += 1
        if _counter > 0xFFF:
            _last_ms += 1
            _counter = 0
        ms = _last_ms
    rand_b = int.from_bytes(os.urandom(8), 'big') & ((1 << 62) - 1)
    value = (ms << 80) | (0x7 << 76) | (_counter << 64) | (0b10 << 62) | rand_b
    h = f'{value:032x}'
    return f'{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}'
