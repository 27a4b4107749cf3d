"""Output modes on the wire: an agent with `output_type=` ToolOutput / a union / NativeOutput /
PromptedOutput sends each provider the request body pydantic-ai 2.62's agent sends (same local
recording server, same folding of equivalent forms as `test_request_bodies`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest

from tests.compat.test_request_bodies import FOLD
from tests.models.providers.server import ProviderServer, fixture

pytest.importorskip('pydantic_ai')


class City(pydantic.BaseModel):
    """A city somewhere."""

    name: str
    population: int | None = None


class Country(pydantic.BaseModel):
    code: str


def output_types(lib: Any) -> dict[str, Any]:
    return {
        'union': [City, Country],
        'tool': lib.ToolOutput(City, name='give_city', description='The city'),
        'native': lib.NativeOutput(City),
        'native union': lib.NativeOutput([City, Country], name='place', description='A place'),
        'prompted': lib.PromptedOutput(City),
        'prompted union': lib.PromptedOutput([City, Country]),
    }


@pytest.fixture(scope='module')
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


def model_for(lib: str, provider: str, server: ProviderServer) -> Any:
    if lib == 'threadline':
        from threadline.models.anthropic import AnthropicModel, AnthropicProvider
        from threadline.models.google import GoogleModel, GoogleProvider
        from threadline.models.openai import OpenAIChatModel, OpenAIProvider
        from threadline.models.openai_responses import OpenAIResponsesModel
    else:
        from pydantic_ai.models.anthropic import AnthropicModel  # type: ignore[assignment]
        from pydantic_ai.models.google import GoogleModel  # type: ignore[assignment]
        from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel  # type: ignore[assignment]
        from pydantic_ai.providers.anthropic import AnthropicProvider  # type: ignore[assignment]
        from pydantic_ai.providers.google import GoogleProvider  # type: ignore[assignment]
        from pydantic_ai.providers.openai import OpenAIProvider  # type: ignore[assignment]
    if provider == 'openai':
        server.queue(fixture('openai_text.json'))
        return OpenAIChatModel('gpt-5.2', provider=OpenAIProvider(base_url=server.url + '/v1', api_key='k'))
    if provider == 'openai-responses':
        server.queue(fixture('openai_responses_text.json'))
        return OpenAIResponsesModel('gpt-5.2', provider=OpenAIProvider(base_url=server.url + '/v1', api_key='k'))
    if provider == 'google':
        server.queue(fixture('gemini_text.json'))
        return GoogleModel('gemini-2.5-flash', provider=GoogleProvider(api_key='k', base_url=server.url))
    server.queue(fixture('anthropic_text.json' if lib == 'threadline' else 'anthropic_stream.json'))
    return AnthropicModel('claude-sonnet-4-6', provider=AnthropicProvider(base_url=server.url, api_key='k'))


async def first_body(lib: str, provider: str, mode: str, server: ProviderServer) -> dict[str, Any]:
    import pydantic_ai

    import threadline

    module = threadline if lib == 'threadline' else pydantic_ai
    agent = module.Agent(model_for(lib, provider, server), output_type=output_types(module)[mode], retries=0)
    before = len(server.bodies())
    with contextlib.suppress(Exception):  # the canned answer need not be a valid output: only the request counts
        await agent.run('Where is the sun warm?')
    assert len(server.bodies()) > before, 'no request was sent'
    return FOLD[provider](server.bodies()[before])


@pytest.mark.parametrize('provider', ['openai', 'openai-responses', 'anthropic', 'google'])
@pytest.mark.parametrize('mode', ['union', 'tool', 'native', 'native union'])
async def test_output_modes_send_what_pydantic_ai_sends(server: ProviderServer, provider: str, mode: str) -> None:
    ours = await first_body('threadline', provider, mode, server)
    reference = await first_body('reference', provider, mode, server)
    assert ours == reference


@pytest.mark.parametrize('provider', ['openai', 'google'])
async def test_a_tool_return_schema_is_sent_as_pydantic_ai_sends_it(server: ProviderServer, provider: str) -> None:
    """Gemini takes it as `response_json_schema`; other providers read it in the description."""
    import pydantic_ai

    import threadline

    bodies = []
    for lib, module in (('threadline', threadline), ('reference', pydantic_ai)):
        agent = module.Agent(model_for(lib, provider, server))

        @agent.tool_plain(include_return_schema=True)
        def lookup(city: str) -> City:
            """Look a city up."""
            return City(name=city)

        before = len(server.bodies())
        with contextlib.suppress(Exception):
            await agent.run('Oslo?')
        bodies.append(FOLD[provider](server.bodies()[before]))
    assert bodies[0] == bodies[1]
    assert (
        'response_json_schema' in str(bodies[0])
        or 'responseJsonSchema' in str(bodies[0])
        or 'Return schema' in str(bodies[0])
    )
