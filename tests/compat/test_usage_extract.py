"""`RequestUsage.extract` reads a provider answer's usage as pydantic-ai 2.62's does: through
genai-prices' rules per provider, looked up by URL, id, then fallback, keeping a cost a Pydantic
AI Gateway wrote, and warning (with the error's type only) when genai-prices fails on the data."""

from __future__ import annotations

import warnings
from decimal import Decimal
from typing import Any

import pytest

from threadline.exceptions import UsageExtractionFailedWarning
from threadline.messages import RequestUsage

pytest.importorskip('pydantic_ai')

_FIELDS = ('input_tokens', 'cache_write_tokens', 'cache_read_tokens', 'output_tokens', 'input_audio_tokens')
_CHAT = {
    'model': 'gpt-4o',
    'usage': {'prompt_tokens': 100, 'completion_tokens': 20, 'prompt_tokens_details': {'cached_tokens': 30}},
}
_RESPONSES = {'model': 'gpt-5', 'usage': {'input_tokens': 50, 'output_tokens': 7}}
_ANTHROPIC = {
    'model': 'claude-sonnet-4-6',
    'usage': {'input_tokens': 10, 'output_tokens': 3, 'cache_read_input_tokens': 5, 'cache_creation_input_tokens': 2},
}
CASES: list[tuple[Any, dict[str, Any]]] = [
    (
        _CHAT,
        {
            'provider': 'openai',
            'provider_url': 'https://api.openai.com/v1',
            'provider_fallback': 'openai',
            'api_flavor': 'chat',
        },
    ),
    (_RESPONSES, {'provider': 'openai', 'provider_url': '', 'provider_fallback': 'openai', 'api_flavor': 'responses'}),
    (
        _ANTHROPIC,
        {'provider': 'anthropic', 'provider_url': 'https://api.anthropic.com', 'provider_fallback': 'anthropic'},
    ),
    (
        _CHAT,
        {
            'provider': 'my-proxy',
            'provider_url': 'http://localhost:1/v1',
            'provider_fallback': 'openai',
            'api_flavor': 'chat',
        },
    ),
    (_CHAT, {'provider': 'nobody', 'provider_url': '', 'provider_fallback': 'nobody-either', 'api_flavor': 'chat'}),
    (
        {**_CHAT, 'usage': {**_CHAT['usage'], 'logfire_ai_gateway': {'cost': '0.0038'}}},
        {'provider': 'openai', 'provider_url': '', 'provider_fallback': 'openai', 'api_flavor': 'chat'},
    ),
    (
        {**_CHAT, 'usage': {**_CHAT['usage'], 'pydantic_ai_gateway': {'cost_estimate': 0}}},
        {'provider': 'openai', 'provider_url': '', 'provider_fallback': 'openai', 'api_flavor': 'chat'},
    ),
    (
        {**_CHAT, 'usage': {**_CHAT['usage'], 'logfire_ai_gateway': {'cost': '-1'}}},
        {'provider': 'openai', 'provider_url': '', 'provider_fallback': 'openai', 'api_flavor': 'chat'},
    ),
    (
        {'model': 'gpt-4o', 'usage': {'prompt_tokens': 'many'}},
        {'provider': 'openai', 'provider_url': '', 'provider_fallback': 'openai', 'api_flavor': 'chat'},
    ),
    ('not an answer', {'provider': 'openai', 'provider_url': '', 'provider_fallback': 'openai', 'api_flavor': 'chat'}),
]


def _read(cls: Any, data: Any, options: dict[str, Any]) -> tuple[Any, ...]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        usage = cls.extract(data, details={'k': 1}, **options)
    warned = [type(w.message).__name__ for w in caught if 'extract usage' in str(w.message)]
    return (*(getattr(usage, f) for f in _FIELDS), usage.cost, dict(usage.details), warned)


@pytest.mark.parametrize(('data', 'options'), CASES)
def test_usage_is_extracted_as_the_reference_extracts_it(data: Any, options: dict[str, Any]) -> None:
    from pydantic_ai.usage import RequestUsage as Reference

    assert _read(RequestUsage, data, options) == _read(Reference, data, options)


def test_a_failed_read_warns_without_the_data() -> None:
    with pytest.warns(UsageExtractionFailedWarning) as caught:
        usage = RequestUsage.extract(
            {'model': 'gpt-4o', 'usage': {'prompt_tokens': 'secret-value'}},
            provider='openai',
            provider_url='',
            provider_fallback='openai',
            api_flavor='chat',
        )
    assert 'secret-value' not in str(caught[0].message)
    assert usage.input_tokens == 0 and usage.cost is None


def test_a_gateway_cost_is_kept() -> None:
    data = {**_CHAT, 'usage': {**_CHAT['usage'], 'logfire_ai_gateway': {'cost': '0.0038'}}}
    usage = RequestUsage.extract(
        data, provider='openai', provider_url='', provider_fallback='openai', api_flavor='chat'
    )
    assert (usage.input_tokens, usage.cost) == (100, Decimal('0.0038'))
