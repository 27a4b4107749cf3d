"""The settings a request relies on, compared with pydantic-ai 2.62 for each provider model:
which of them a model warns it ignores (`UnsupportedSettingWarning`), and what the others put on
the wire (`extra_body`, `extra_headers`, `parallel_tool_calls`, `max_retries`).

Both libraries send one request through the official SDK to a local server that records it. The
warning texts are compared whole for OpenAI and Anthropic; for Gemini, only the settings named,
as the reference names the model `google-gla:...` after its provider class and Threadline
`google:...`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from tests.models.providers.server import ProviderServer, fixture

pytest.importorskip('pydantic_ai')

PROVIDERS = ['openai', 'openai-responses', 'anthropic', 'google']
REPLY = {
    'openai': 'openai_text.json',
    'openai-responses': 'openai_responses_text.json',
    'anthropic': 'anthropic_text.json',
    'google': 'gemini_text.json',
}
GUARANTEES: dict[str, Any] = {
    'timeout': 30.0,
    'stop_sequences': ['STOP'],
    'parallel_tool_calls': False,
    'extra_headers': {'x-trace': 'abc'},
    'extra_body': {'user': 'u-1'},
    'seed': 7,  # a tuning knob: never warns
    'logit_bias': {'50256': -100},
}
TOOL = {'type': 'object', 'properties': {'city': {'type': 'string'}}, 'required': ['city']}


@pytest.fixture(scope='module')
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


def _ours(server: ProviderServer, provider: str) -> Any:
    from threadline.models.openai import OpenAIProvider

    if provider == 'openai':
        from threadline.models.openai import OpenAIChatModel

        return OpenAIChatModel(
            'gpt-5.2', provider=OpenAIProvider(base_url=server.url + '/v1', api_key='k', max_retries=0)
        )
    if provider == 'openai-responses':
        from threadline.models.openai_responses import OpenAIResponsesModel

        return OpenAIResponsesModel(
            'gpt-5.2', provider=OpenAIProvider(base_url=server.url + '/v1', api_key='k', max_retries=0)
        )
    if provider == 'google':
        from threadline.models.google import GoogleModel, GoogleProvider

        return GoogleModel('gemini-2.5-flash', provider=GoogleProvider(api_key='k', base_url=server.url))
    from threadline.models.anthropic import AnthropicModel, AnthropicProvider

    return AnthropicModel(
        'claude-sonnet-4-6', provider=AnthropicProvider(base_url=server.url, api_key='k', max_retries=0)
    )


def _reference(server: ProviderServer, provider: str) -> Any:
    from pydantic_ai.providers.openai import OpenAIProvider

    if provider == 'openai':
        from pydantic_ai.models.openai import OpenAIChatModel

        return OpenAIChatModel('gpt-5.2', provider=OpenAIProvider(base_url=server.url + '/v1', api_key='k'))
    if provider == 'openai-responses':
        from pydantic_ai.models.openai import OpenAIResponsesModel

        return OpenAIResponsesModel('gpt-5.2', provider=OpenAIProvider(base_url=server.url + '/v1', api_key='k'))
    if provider == 'google':
        from pydantic_ai.models.google import GoogleModel
        from pydantic_ai.providers.google import GoogleProvider

        return GoogleModel('gemini-2.5-flash', provider=GoogleProvider(api_key='k', base_url=server.url))
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    return AnthropicModel('claude-sonnet-4-6', provider=AnthropicProvider(base_url=server.url, api_key='k'))


async def _send(
    server: ProviderServer, provider: str, lib: str, settings: dict[str, Any]
) -> tuple[list[str], dict[str, Any]]:
    """The warnings one request raised, and the request the server saw."""
    if lib == 'ours':
        from threadline.messages import ModelRequest
        from threadline.models import ModelRequestParameters, ToolDefinition

        model = _ours(server, provider)
        params: Any = ModelRequestParameters(function_tools=[ToolDefinition('weather', TOOL, 'Weather.')])
        reply = REPLY[provider]
    else:
        from pydantic_ai.messages import ModelRequest  # type: ignore[assignment]
        from pydantic_ai.models import ModelRequestParameters as ReferenceParameters
        from pydantic_ai.tools import ToolDefinition as ReferenceTool

        model = _reference(server, provider)
        params = ReferenceParameters(
            function_tools=[ReferenceTool(name='weather', parameters_json_schema=TOOL, description='Weather.')]
        )
        reply = 'anthropic_stream.json' if provider == 'anthropic' else REPLY[provider]  # it always streams
    server.queue(fixture(reply))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        await model.request([ModelRequest.user_text_prompt('hi')], settings, params)
    texts = [str(w.message) for w in caught if type(w.message).__name__ == 'UnsupportedSettingWarning']
    return texts, server.requests[-1]


def _named(texts: list[str]) -> list[str]:
    return sorted(m.group(1) for text in texts if (m := re.match(r'The `(\w+)` setting', text)))


@pytest.mark.parametrize('provider', PROVIDERS)
async def test_the_same_settings_warn(server: ProviderServer, provider: str) -> None:
    ours, _ = await _send(server, provider, 'ours', dict(GUARANTEES))
    reference, _ = await _send(server, provider, 'reference', dict(GUARANTEES))
    assert _named(ours) == _named(reference)
    if provider != 'google':
        assert sorted(ours) == sorted(reference)


@pytest.mark.parametrize('provider', PROVIDERS)
async def test_parallel_tool_calls_true_never_warns(server: ProviderServer, provider: str) -> None:
    ours, _ = await _send(server, provider, 'ours', {'parallel_tool_calls': True})
    reference, _ = await _send(server, provider, 'reference', {'parallel_tool_calls': True})
    assert ours == reference == []


@pytest.mark.parametrize('provider', ['openai', 'openai-responses', 'anthropic'])
async def test_extra_body_and_headers_reach_the_wire(server: ProviderServer, provider: str) -> None:
    settings = {'extra_body': {'metadata': {'user_id': 'u-1'}}, 'extra_headers': {'x-trace': 'abc'}}
    for lib in ('ours', 'reference'):
        _, sent = await _send(server, provider, lib, dict(settings))
        assert sent['body']['metadata'] == {'user_id': 'u-1'}, lib
        assert sent['headers']['x-trace'] == 'abc', lib


async def test_gemini_extra_headers_reach_the_wire(server: ProviderServer) -> None:
    for lib in ('ours', 'reference'):
        _, sent = await _send(server, 'google', lib, {'extra_headers': {'x-trace': 'abc'}})
        assert sent['headers']['x-trace'] == 'abc', lib


@pytest.mark.parametrize('provider', ['openai', 'openai-responses', 'anthropic'])
async def test_parallel_tool_calls_false_is_sent(server: ProviderServer, provider: str) -> None:
    bodies = []
    for lib in ('ours', 'reference'):
        _, sent = await _send(server, provider, lib, {'parallel_tool_calls': False})
        body = sent['body']
        if provider == 'anthropic':  # its own spelling: the tool choice's `disable_parallel_tool_use`
            bodies.append(not body['tool_choice']['disable_parallel_tool_use'])
        else:
            bodies.append(body['parallel_tool_calls'])
    assert bodies == [False, False]
