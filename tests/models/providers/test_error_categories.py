"""A provider's HTTP errors, caught by category (`ModelRateLimitError`, `ModelContextWindowExceededError`,
...) as pydantic-ai 2.62 raises them: the same answers, from one local server, through both
libraries' OpenAI and Anthropic models."""

from __future__ import annotations

from typing import Any

import pytest

from tests.models.providers.conftest import anthropic_model, openai_model
from tests.models.providers.server import ProviderServer
from threadline import Agent
from threadline.exceptions import ModelHTTPError, ModelRateLimitError

CATEGORIES = [
    'ModelRateLimitError',
    'ModelQuotaExceededError',
    'ModelUnavailableError',
    'ModelOverloadedError',
    'ModelServerError',
    'ModelRequestRejectedError',
    'ModelContextWindowExceededError',
    'ModelAuthenticationError',
    'ModelNotFoundError',
]

OPENAI = {
    'rate limit': (429, {'error': {'message': 'slow down', 'type': 'requests', 'code': 'rate_limit_exceeded'}}),
    'quota': (429, {'error': {'message': 'no credits', 'type': 'insufficient_quota', 'code': 'insufficient_quota'}}),
    'context': (
        400,
        {'error': {'message': 'too long', 'type': 'invalid_request_error', 'code': 'context_length_exceeded'}},
    ),
    'bad key': (401, {'error': {'message': 'who?', 'type': 'invalid_request_error', 'code': 'invalid_api_key'}}),
    'no model': (404, {'error': {'message': 'none', 'type': 'invalid_request_error', 'code': 'model_not_found'}}),
    'rejected': (422, {'error': {'message': 'bad', 'type': 'invalid_request_error', 'code': None}}),
    'unavailable': (503, {'error': {'message': 'later', 'type': 'server_error', 'code': None}}),
    'server': (502, {'error': {'message': 'oops', 'type': 'server_error', 'code': None}}),
}
ANTHROPIC = {
    'overloaded': (529, {'type': 'error', 'error': {'type': 'overloaded_error', 'message': 'Overloaded'}}),
    'rate limit': (429, {'type': 'error', 'error': {'type': 'rate_limit_error', 'message': 'slow'}}),
    'too long': (400, {'type': 'error', 'error': {'type': 'invalid_request_error', 'message': 'prompt is too long'}}),
    'server': (500, {'type': 'error', 'error': {'type': 'api_error', 'message': 'oops'}}),
}


def _reference_model(provider: str, server: ProviderServer) -> Any:
    """pydantic-ai's model on an SDK client that does not retry (the server answers each case once)."""
    if provider == 'openai':
        from openai import AsyncOpenAI
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        client = AsyncOpenAI(base_url=server.url + '/v1', api_key='k', max_retries=0)
        return OpenAIChatModel('gpt-5.2', provider=OpenAIProvider(openai_client=client))
    from anthropic import AsyncAnthropic
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    client = AsyncAnthropic(base_url=server.url, api_key='k', max_retries=0)
    return AnthropicModel('claude-sonnet-4-6', provider=AnthropicProvider(anthropic_client=client))


async def _categories(agent: Any, error_types: Any) -> list[str]:
    try:
        await agent.run('hi')
    except error_types as error:
        return sorted(name for name in CATEGORIES if any(c.__name__ == name for c in type(error).__mro__))
    return []


@pytest.mark.parametrize(('provider', 'case'), [('openai', c) for c in OPENAI] + [('anthropic', c) for c in ANTHROPIC])
async def test_an_http_error_is_caught_by_its_category(provider: str, case: str) -> None:
    from pydantic_ai import Agent as ReferenceAgent
    from pydantic_ai.exceptions import ModelHTTPError as ReferenceHTTPError

    status, body = (OPENAI if provider == 'openai' else ANTHROPIC)[case]
    with ProviderServer() as server:
        server.queue({'status': status, 'body': body}, {'status': status, 'body': body})
        ours_model = openai_model(server) if provider == 'openai' else anthropic_model(server)
        ours = await _categories(Agent(ours_model), ModelHTTPError)
        theirs = await _categories(ReferenceAgent(_reference_model(provider, server)), ReferenceHTTPError)
    assert ours == theirs
    assert ours, 'every case here has a category'


async def test_a_categorized_error_is_still_a_model_http_error(server: ProviderServer) -> None:
    server.queue({'status': 429, 'body': OPENAI['rate limit'][1]})
    with pytest.raises(ModelRateLimitError) as caught:
        await Agent(openai_model(server)).run('hi')
    assert isinstance(caught.value, ModelHTTPError) and caught.value.status_code == 429
    assert type(caught.value).__name__ == 'ModelRateLimitError'


def test_a_categorized_error_pickles_and_is_made_for_custom_models() -> None:
    import pickle

    from threadline.exceptions import ModelContextWindowExceededError, ModelRequestRejectedError

    error = ModelHTTPError.for_category(ModelContextWindowExceededError, status_code=400, model_name='m', body={'x': 1})
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and isinstance(back, ModelRequestRejectedError)
    assert (back.status_code, back.model_name, back.body) == (400, 'm', {'x': 1})
    assert type(ModelHTTPError.for_category(None, status_code=418, model_name='m')) is ModelHTTPError
