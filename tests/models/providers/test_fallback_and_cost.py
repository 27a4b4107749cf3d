"""`FallbackModel` and cost with the official SDK clients against the local server: a 429 and an
unreachable provider move on to the next model, and the answer is priced at the answering model's
genai-prices price (checked against genai-prices itself). A response whose model genai-prices does
not list (the fixtures' made-up snapshot names) has no cost, as in pydantic-ai."""

from __future__ import annotations

import socket
from decimal import Decimal

import pytest

from tests.models.providers.conftest import anthropic_model, openai_model
from tests.models.providers.server import ProviderServer, fixture
from threadline import Agent, ModelResponse
from threadline.agent import UsageLimits
from threadline.exceptions import FallbackExceptionGroup, ModelConnectionError, UsageLimitExceeded, UserError
from threadline.models import FallbackModel
from threadline.models.openai import OpenAIChatModel, OpenAIProvider


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return int(s.getsockname()[1])


def reference_price(model: str, provider: str, **usage: int) -> Decimal:
    from genai_prices import Usage, calc_price

    return Decimal(calc_price(Usage(**usage), model, provider_id=provider).total_price)


def test_a_rate_limited_provider_falls_back_and_the_answer_is_priced(server: ProviderServer) -> None:
    server.queue(fixture('openai_rate_limit.json'), fixture('anthropic_text.json'))
    model = FallbackModel(openai_model(server), anthropic_model(server))
    result = Agent(model).run_sync('hello')
    assert [r['path'] for r in server.requests] == ['/v1/chat/completions', '/v1/messages']
    response = result.all_messages()[-1]
    assert isinstance(response, ModelResponse) and response.provider_name == 'anthropic'
    usage = response.usage
    expected = reference_price(
        response.model_name or '',
        'anthropic',
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cache_read_tokens=usage.cache_read_tokens,
    )
    assert usage.cost == expected and expected > 0
    assert result.usage.cost == expected  # the run's total carries it too


def test_an_unreachable_provider_falls_back(server: ProviderServer) -> None:
    server.queue(fixture('anthropic_text.json'))
    down = OpenAIProvider(base_url=f'http://127.0.0.1:{closed_port()}/v1', api_key='k', max_retries=0)
    model = FallbackModel(OpenAIChatModel('gpt-5.2', provider=down), anthropic_model(server))
    assert Agent(model).run_sync('hello').output
    with pytest.raises(FallbackExceptionGroup) as raised:
        Agent(FallbackModel(OpenAIChatModel('gpt-5.2', provider=down))).run_sync('hello')
    assert isinstance(raised.value.exceptions[0], ModelConnectionError)


async def test_a_stream_falls_back_on_a_rate_limit(server: ProviderServer) -> None:
    server.queue(fixture('openai_rate_limit.json'), fixture('anthropic_stream.json'))
    model = FallbackModel(openai_model(server), anthropic_model(server))
    async with Agent(model).run_stream('hello') as result:
        text = await result.get_output()
    assert text and server.requests[1]['body']['stream'] is True


def test_cost_limit_needs_a_price_for_every_model(server: ProviderServer) -> None:
    limits = UsageLimits(cost_limit=0.01)
    with pytest.raises(UserError, match="no price for 'my-local-finetune'"):
        Agent(openai_model(server, 'my-local-finetune')).run_sync('hello', usage_limits=limits)
    assert server.requests == []  # refused before any request
    with pytest.raises(UserError, match='no price'):
        Agent(FallbackModel(openai_model(server, 'gpt-4o'), openai_model(server, 'unpriced'))).run_sync(
            'hello', usage_limits=limits
        )


def test_cost_limit_stops_the_request_that_would_cross_it(server: ProviderServer) -> None:
    answer = fixture('openai_text.json')
    answer['body']['model'] = 'gpt-4o-2024-08-06'  # a snapshot genai-prices lists
    server.queue(answer)
    agent = Agent(openai_model(server, 'gpt-4o'))
    first = agent.run_sync('hello', usage_limits=UsageLimits(cost_limit=1))
    spent = first.usage.cost
    assert spent == reference_price('gpt-4o-2024-08-06', 'openai', input_tokens=120, output_tokens=9) > 0
    # A long history whose input alone costs more than what is left: refused before it is sent.
    history = first.all_messages()
    with pytest.raises(UsageLimitExceeded, match='next request would exceed the cost_limit'):
        agent.run_sync(
            'x ' * 40_000,
            message_history=history,
            usage=first.usage,
            usage_limits=UsageLimits(cost_limit=spent + Decimal('0.0001')),
        )
    assert len(server.requests) == 1
