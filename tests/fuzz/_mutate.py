"""Mutations of real inputs, for the fuzz run: a value swapped deep inside a parsed document, or
bytes flipped, cut or spliced in the serialized one. Deterministic per seed."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

__all__ = ['WEIRD', 'mutate_bytes', 'mutate_value']

WEIRD: list[Any] = [
    None,
    True,
    0,
    -1,
    2**64,
    1e308,
    -0.0,
    '',
    'x' * 600,
    '\ud800',
    '\x00',
    'a\nb',
    '²',
    'data:image/png;base64,!!',
    'data:,x',
    'file:///etc/passwd',
    'tool-x',
    'data-x',
    'text',
    'file',
    'user',
    'assistant',
    'tool',
    'request',
    'response',
    'user-prompt',
    'tool-call',
    'tool-return',
    '2025-13-45T99:00:00Z',
    [],
    {},
    [None],
    {'type': None},
    {'kind': 'request', 'parts': []},
]
ATOMS = [b'-1e400', b'1e999', b'"\\ud800"', b'"\xff"', b'null', b'[', b']', b'{', b'}', b',', b'"', b'\\', b'[' * 200]


def mutate_value(value: Any, rng: random.Random, rounds: int = 3) -> Any:
    """A deep copy of `value` with up to `rounds` values replaced, anywhere in it."""
    out = json.loads(json.dumps(value))
    for _ in range(rng.randint(1, rounds)):
        target: Any = out
        if not isinstance(target, (dict, list)) or not target:
            return _weird(rng)
        while True:
            keys = list(target) if isinstance(target, dict) else list(range(len(target)))
            key = rng.choice(keys)
            child = target[key]
            if isinstance(child, (dict, list)) and child and rng.random() < 0.7:
                target = child
                continue
            roll = rng.random()
            if roll < 0.7:
                target[key] = _weird(rng)
            elif roll < 0.85 and isinstance(target, dict):
                del target[key]
            else:
                copies = [copy.deepcopy(child) for _ in range(rng.randint(2, 40))]
                target[key] = copies if rng.random() < 0.5 else {'nested': child}
            break
    return out


def _weird(rng: random.Random) -> Any:
    return copy.deepcopy(rng.choice(WEIRD))  # never the shared object: a later mutation would change it


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """`data` with a few bytes flipped, a splice of JSON atoms, or a cut."""
    buffer = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.35 and buffer:
            buffer[rng.randrange(len(buffer))] = rng.randrange(256)
        elif roll < 0.8:
            at = rng.randrange(len(buffer) + 1)
            buffer[at:at] = rng.choice(ATOMS)
        elif buffer:
            at = rng.randrange(len(buffer))
            del buffer[at : at + rng.randint(1, 20)]
    return bytes(buffer)
