"""`async with` on providers, models and agents, as pydantic-ai 2.62 has it: the HTTP client a
provider made is closed when the last block that entered it ends, a client the application
passed in is left open, and a closed provider can be used again. Over a local server."""

from __future__ import annotations

import httpx
import pytest

from tests.models.providers.conftest import anthropic_model, openai_model
from tests.models.providers.server import ProviderServer, fixture
from threadline import Agent
from threadline.capabilities import AbstractCapability
from threadline.models import Model
from threadline.models.google import GoogleProvider
from threadline.models.openai import OpenAIChatModel, OpenAIProvider
from threadline.models.wrapper import WrapperModel


async def test_an_agents_block_keeps_its_client_open_and_closes_it_at_the_end(server: ProviderServer) -> None:
    model = openai_model(server)
    agent = Agent(model)
    server.queue(fixture('openai_text.json'), fixture('openai_text.json'))
    async with agent:
        client = model.provider.client
        async with agent:  # nested: the inner exit leaves the client open
            assert (await agent.run('one')).output
        assert not client.is_closed()
        assert (await agent.run('two')).output
        assert model.provider.client is client
    assert client.is_closed()
    server.queue(fixture('openai_text.json'))
    assert (await agent.run('after the block')).output  # a new client, made as the first was


async def test_a_client_the_application_passed_in_is_never_closed(server: ProviderServer) -> None:
    http = httpx.AsyncClient()
    provider = OpenAIProvider(base_url=server.url + '/v1', api_key='k', http_client=http, max_retries=0)
    server.queue(fixture('openai_text.json'))
    async with Agent(OpenAIChatModel('gpt-5.2', provider=provider)) as agent:
        await agent.run('hi')
    assert not http.is_closed
    await http.aclose()


async def test_a_provider_shared_by_two_models_stays_open_while_either_is_entered(server: ProviderServer) -> None:
    first = anthropic_model(server)
    second = type(first)('claude-opus-4-5', provider=first.provider)
    client = first.provider.client
    async with first:
        async with second:
            pass
        assert not client.is_closed()
    assert client.is_closed()
    await first.provider.__aexit__(None, None, None)  # an exit without an entry does nothing


async def test_a_google_provider_closes_its_client() -> None:
    pytest.importorskip('google.genai')
    provider = GoogleProvider(api_key='k')
    client = provider.client
    async with provider:
        pass
    assert provider.client is not client  # the closed one was replaced, ready for the next use
    assert client.aio._api_client._async_httpx_client.is_closed


class _Counted(WrapperModel):
    entered = 0

    async def __aenter__(self) -> WrapperModel:
        type(self).entered += 1
        return await super().__aenter__()


async def test_a_capabilitys_wrapper_does_not_close_the_runs_model(server: ProviderServer) -> None:
    """A wrapper a capability adds is entered around each request; the model it wraps is the
    agent's, so the wrapper's exit must not close that model's client between requests."""
    model = openai_model(server)

    class Wrapping(AbstractCapability[None]):
        def get_wrapper_model(self, model: Model) -> Model:
            return _Counted(model)

    server.queue(fixture('openai_tool_call.json'), fixture('openai_text.json'))
    agent = Agent(model, capabilities=[Wrapping()])

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return 'sunny'

    async with agent:
        client = model.provider.client
        await agent.run('weather?')
        assert not client.is_closed()
    assert _Counted.entered == 2  # once per request
    assert client.is_closed()
    server.queue(fixture('openai_tool_call.json'), fixture('openai_text.json'))
    client = model.provider.client
    await agent.run('weather, outside any block?')
    assert model.provider.client is client and not client.is_closed()  # kept for the next run
