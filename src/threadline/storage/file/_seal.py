"""Sealing a FileStore's conversation files, and checking the seals (see `_seal` for the seal).

Each write appends its lines followed by one seal line whose tag covers the exact bytes of every
line since the previous seal, in the same `write` call (a torn write leaves no sealed half).
`check` re-reads the file and walks it: bytes edited, inserted or removed anywhere make the next
seal fail; lines after the last seal were not written by a store holding the key.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import msgspec

from threadline.storage.file._records import SealLine, decode_line
from threadline.trust.sealing import Link, Problem, StoreSeal, Tip, Walk

__all__ = ['SealedBytes', 'check', 'seal_bytes']

_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class SealedBytes:
    """Lines to append, ending with their seal line, and the tip to record once they are on disk."""

    data: bytes
    tip: Tip


def seal_bytes(
    seal: StoreSeal,
    data: bytes,
    *,
    conversation_id: str,
    scope: str,
    seq: int,
    prev: str,
    genesis: str | None,
    adopted: str | None = None,
    covers: bytes = b'',
) -> SealedBytes:
    """`data` (whole lines) followed by the seal line that covers the file's unsealed bytes before
    it (`covers`: the whole file, when a file written before seals is adopted) and `data`."""
    key_id, tag = seal.tag(prev, conversation_id, scope, seq, hashlib.sha256(covers + data).hexdigest())
    line = _encoder.encode(SealLine(seq=seq, key=key_id, tag=tag, adopted=adopted)) + b'\n'
    return SealedBytes(data + line, Tip(genesis or tag, seq, tag))


def check(seal: StoreSeal, location: str, data: bytes, conversation_id: str, scope: str) -> tuple[Walk, Problem | None]:
    """Walk the seals of a file's bytes (a torn last line is ignored): (walk, first problem)."""
    links: list[Link] = []
    digest = hashlib.sha256()
    start = 0
    number = 0
    for number, line in enumerate(data[: data.rfind(b'\n') + 1].split(b'\n')[:-1], start=1):
        record = decode_line(line) if line.startswith(b'{"t":"seal"') else None
        if isinstance(record, SealLine):
            links.append(Link(record.seq, record.key, record.tag, digest.hexdigest(), f'line {number}'))
            digest, start = hashlib.sha256(), number + 1
        else:
            digest.update(line + b'\n')
    walk, problem = seal.check(location, conversation_id, scope, links)
    if problem is not None:
        return walk, problem
    if start <= number:
        why = 'it and the lines after it have no seal: they were not written by the store'
        return walk, Problem(f'line {start}', 'record_unsealed', why)
    return walk, None
