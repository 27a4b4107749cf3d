"""Deterministic, realistic histories in wire form (JSON-ready dicts) for tests.

The benchmarks use `../shared/bench/workload.py` so that both sides see the same data; tests must
pass in a bare clone, so they build their own here. A turn is four messages: a user prompt (the
first turn opens with a system prompt; some prompts are a list with a `text-content` item), a
response with a tool call (and sometimes thinking), the tool's return (some failed, some with
metadata) and a text answer with usage. Every message carries run and conversation ids.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ['history', 'turn']

_T0 = datetime(2025, 3, 1, tzinfo=UTC)
_WORDS = [
    'order',
    'refund',
    'invoice',
    'parcel',
    'delay',
    'ticket',
    'build',
    'retry',
    'payment',
    'account',
    'weather',
    'report',
    'cache',
    'index',
]


def _ts(seconds: float) -> str:
    return (_T0 + timedelta(seconds=seconds)).isoformat().replace('+00:00', 'Z')


def _words(rng: random.Random, n: int) -> str:
    return ' '.join(rng.choice(_WORDS) + ('' if rng.random() < 0.7 else str(rng.randint(1, 999))) for _ in range(n))


def _usage(rng: random.Random) -> dict[str, Any]:
    return {'input_tokens': rng.randint(50, 5000), 'output_tokens': rng.randint(5, 400), 'details': {}}


def _prompt(rng: random.Random, index: int, at: float) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if index == 0:
        parts.append({'part_kind': 'system-prompt', 'content': 'You are a support agent.', 'timestamp': _ts(at)})
    content: Any = _words(rng, 12)
    if rng.random() < 0.1:
        content = [content, {'kind': 'text-content', 'content': _words(rng, 4), 'metadata': {'source': 'form'}}]
    parts.append({'part_kind': 'user-prompt', 'content': content, 'timestamp': _ts(at)})
    return {'kind': 'request', 'parts': parts, 'timestamp': _ts(at)}


def _call(rng: random.Random, index: int, at: float) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if rng.random() < 0.3:
        parts.append({'part_kind': 'thinking', 'content': _words(rng, 10)})
    args = {'query': _words(rng, 3), 'limit': rng.randint(1, 20)}
    parts.append({'part_kind': 'tool-call', 'tool_name': 'lookup', 'args': args, 'tool_call_id': f'call-{index}'})
    return {'kind': 'response', 'parts': parts, 'usage': _usage(rng), 'model_name': 'test', 'timestamp': _ts(at)}


def _tool_return(rng: random.Random, index: int, at: float) -> dict[str, Any]:
    part: dict[str, Any] = {
        'part_kind': 'tool-return',
        'tool_name': 'lookup',
        'content': {'rows': [_words(rng, 8) for _ in range(rng.randint(1, 6))]},
        'tool_call_id': f'call-{index}',
        'timestamp': _ts(at),
    }
    if rng.random() < 0.05:
        part['outcome'] = 'failed'
    if rng.random() < 0.3:
        part['metadata'] = {'latency_ms': rng.randint(1, 900)}
    return {'kind': 'request', 'parts': [part], 'timestamp': _ts(at)}


def _answer(rng: random.Random, at: float) -> dict[str, Any]:
    parts = [{'part_kind': 'text', 'content': _words(rng, 40)}]
    return {'kind': 'response', 'parts': parts, 'usage': _usage(rng), 'model_name': 'test', 'timestamp': _ts(at)}


def turn(index: int, *, conversation_id: str = 'conv-1', seed: int = 0) -> list[dict[str, Any]]:
    """The four messages of turn `index` of a conversation."""
    rng = random.Random(seed * 1_000_003 + index)
    at = index * 60.0
    messages = [
        _prompt(rng, index, at),
        _call(rng, index, at + 1),
        _tool_return(rng, index, at + 2),
        _answer(rng, at + 3),
    ]
    for message in messages:
        message['run_id'] = f'run-{index}'
        message['conversation_id'] = conversation_id
    return messages


def history(size: int, *, seed: int = 0, conversation_id: str = 'conv-1') -> list[dict[str, Any]]:
    """About `size` messages (whole turns), the same for the same arguments."""
    out: list[dict[str, Any]] = []
    index = 0
    while len(out) < size:
        out.extend(turn(index, conversation_id=conversation_id, seed=seed))
        index += 1
    return out
