"""Random, valid histories in wire form (JSON-ready dicts) that both libraries load.

Each history ends with a request. It mixes every part kind a provider mapping has to handle:
standing and mid-conversation system prompts, text and multimodal user content with cache
points, tool returns (text, objects, lists), tool retry prompts (text and validation errors),
plain retry prompts, thinking (signed or not, from this provider or another), empty texts, and
tool calls whose arguments are a dict, JSON text with odd whitespace, empty, or cut off.
"""

from __future__ import annotations

import base64
import random
from typing import Any

__all__ = ['history']

_PNG = base64.b64encode(bytes.fromhex('89504e470d0a1a0a0000000d4948445200000001000000010806000000')).decode()
_PDF = base64.b64encode(b'%PDF-1.4 tiny').decode()
_WAV = base64.b64encode(b'RIFF....WAVEfmt ').decode()
_ARGS = ({'city': 'Paris'}, '{"city": "Rome"}', '{"city": "Os', None, '{}', '{ "city" :  "Oslo" }')
_ERRORS = [{'type': 'missing', 'loc': ['city'], 'msg': 'Field required', 'input': {}}]


def _user_content(r: random.Random, audio: bool, urls: bool) -> Any:
    if r.random() < 0.5:
        return r.choice(['Hello', 'What is the weather in Paris?', 'déjà vu 東京', ''])
    items: list[Any] = []
    kinds = ['text', 'image_bytes', 'pdf', 'cache'] + (['audio'] if audio else []) + (['image_url'] if urls else [])
    for _ in range(r.randint(1, 3)):
        kind = r.choice(kinds)
        if kind == 'text':
            items.append(r.choice(['look at this', 'and this']))
        elif kind == 'image_url':
            items.append({'url': 'https://example.com/cat.png', 'kind': 'image-url'})
        elif kind == 'image_bytes':
            items.append({'data': _PNG, 'media_type': 'image/png', 'kind': 'binary'})
        elif kind == 'pdf':
            items.append({'data': _PDF, 'media_type': 'application/pdf', 'kind': 'binary'})
        elif kind == 'audio':
            items.append({'data': _WAV, 'media_type': 'audio/wav', 'kind': 'binary'})
        elif items:
            items.append({'kind': 'cache-point'})
    return items or ['fallback text']


def _answers(r: random.Random, pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
    parts = []
    for call in pending:
        ids = {'tool_name': call['tool_name'], 'tool_call_id': call['tool_call_id']}
        if r.random() < 0.67:
            content = r.choice(['sunny', {'temp': 21, 'sky': 'clear'}, [1, 2]])
            parts.append({'part_kind': 'tool-return', 'content': content, **ids})
        else:
            content = r.choice(['city must be a string', _ERRORS])
            parts.append({'part_kind': 'retry-prompt', 'content': content, **ids})
    return parts


def _response(r: random.Random, provider: str, first_call: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if r.random() < 0.4:
        signature = 'c2lnMTIz' if r.random() < 0.7 else None  # base64, as Gemini's are
        origin = r.choice([provider, 'another-provider'])
        thinking = {
            'part_kind': 'thinking',
            'content': 'Let me think.',
            'signature': signature,
            'provider_name': origin,
        }
        if r.random() < 0.5:
            thinking['id'] = f'rs_{first_call}'  # an item id, as the Responses API gives reasoning
        parts.append(thinking)
    if r.random() < 0.6:
        parts.append({'part_kind': 'text', 'content': r.choice(['Sure.', 'Checking.', ''])})
    for k in range(r.choice([0, 1, 1, 2])):
        args = r.choice(_ARGS)
        call = {
            'part_kind': 'tool-call',
            'tool_name': 'get_weather',
            'args': args,
            'tool_call_id': f'call_{first_call + k}',
        }
        if r.random() < 0.5:
            call['id'] = f'fc_{first_call + k}'
        parts.append(call)
    parts = parts or [{'part_kind': 'text', 'content': 'Hi.'}]
    return {'kind': 'response', 'parts': parts, 'model_name': 'm', 'provider_name': provider}


def history(seed: int, provider: str, *, audio: bool = True, urls: bool = True) -> list[dict[str, Any]]:
    """The history numbered `seed`, with responses attributed to `provider` (without audio or
    URLs when the provider under test cannot take them, or would download them)."""
    r = random.Random(seed)
    messages: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    calls = 0
    turns = r.randint(1, 4)
    for turn in range(turns):
        parts: list[dict[str, Any]] = []
        if turn == 0 and r.random() < 0.7:
            parts.append({'part_kind': 'system-prompt', 'content': 'You are a weather bot.'})
        elif turn and r.random() < 0.2:
            parts.append({'part_kind': 'system-prompt', 'content': 'MID: answer formally.'})
        parts += _answers(r, pending)
        if r.random() < 0.15:
            parts.append({'part_kind': 'retry-prompt', 'content': 'Please answer with a tool call.'})
        if not parts or r.random() < 0.7:
            parts.append({'part_kind': 'user-prompt', 'content': _user_content(r, audio, urls)})
        messages.append({'kind': 'request', 'parts': parts})
        if turn == turns - 1:
            break
        response = _response(r, provider, calls + 1)
        pending = [p for p in response['parts'] if p['part_kind'] == 'tool-call']
        calls += len(pending)
        messages.append(response)
    return messages
