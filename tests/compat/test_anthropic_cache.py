"""Prompt caching on Anthropic is sent as pydantic-ai 2.62 sends it: the `anthropic_cache*`
settings and the unified `cache` setting put the same cache breakpoints on tools, the system
prompt and the conversation (with the histories' own `CachePoint`s, trimmed to the API's four),
and both refuse the same settings before sending.

Each case makes one request per side through the official SDK to a local server, over the
seeded histories `test_request_bodies` uses, with its tools, and compares the whole body folded
as that module folds it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.compat._histories import history
from tests.compat.test_request_bodies import FOLD, TOOLS
from tests.models.providers.server import ProviderServer, fixture
from threadline.messages import ModelMessagesTypeAdapter, repair_messages
from threadline.models import ModelRequestParameters, ToolDefinition, render_history

pytest.importorskip('pydantic_ai')

SETTINGS: list[dict[str, Any]] = [
    {},
    {'anthropic_cache_tool_definitions': True},
    {'anthropic_cache_instructions': '1h'},
    {'anthropic_cache': True},
    {'anthropic_cache': '1h', 'anthropic_cache_tool_definitions': '5m', 'anthropic_cache_instructions': True},
    {'anthropic_cache_messages': True},
    {'anthropic_cache_messages': '1h', 'anthropic_cache_instructions': True},
    {'cache': True},
    {'cache': '5m'},
    {'cache': '30m'},
    {'cache': '1h'},
    {'cache': {'messages': False}},
    {'cache': {'retention': '1h', 'messages': True}},
    {'cache': False},
    {'cache': True, 'anthropic_cache': False},  # any provider setting, even False, wins
    {'cache': '1h', 'anthropic_cache_tool_definitions': True},
]
REFUSED: list[dict[str, Any]] = [
    {'anthropic_cache': True, 'anthropic_cache_messages': True},
    {'cache': '2h'},
    {'cache': {'retention': '5m', 'everything': True}},
]
_MODELS: dict[tuple[str, str], Any] = {}


@pytest.fixture(scope='module')
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


async def _ours(server: ProviderServer, messages: list[dict[str, Any]], settings: dict[str, Any]) -> dict[str, Any]:
    from threadline.models.anthropic import AnthropicModel, AnthropicProvider

    if ('ours', server.url) not in _MODELS:
        provider = AnthropicProvider(base_url=server.url, api_key='k', max_retries=0)
        _MODELS['ours', server.url] = AnthropicModel('claude-sonnet-4-6', provider=provider)
    model = _MODELS['ours', server.url]
    tools = [ToolDefinition(name, copy.deepcopy(schema), 'A tool.', strict=strict) for name, schema, strict in TOOLS]
    prepared, _ = render_history(
        repair_messages(ModelMessagesTypeAdapter.validate_json(json.dumps(messages))), model.profile
    )
    server.replies.clear()
    server.queue(fixture('anthropic_text.json'))
    await model.request(prepared, settings, ModelRequestParameters(function_tools=tools))  # type: ignore[arg-type]
    return server.bodies()[-1]


async def _reference(
    server: ProviderServer, messages: list[dict[str, Any]], settings: dict[str, Any]
) -> dict[str, Any]:
    from pydantic_ai import ModelMessagesTypeAdapter as ReferenceTA
    from pydantic_ai.models import ModelRequestParameters as ReferenceParameters
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider
    from pydantic_ai.tools import ToolDefinition as ReferenceTool

    if ('reference', server.url) not in _MODELS:
        provider = AnthropicProvider(base_url=server.url, api_key='k')
        _MODELS['reference', server.url] = AnthropicModel('claude-sonnet-4-6', provider=provider)
    model = _MODELS['reference', server.url]
    tools = [
        ReferenceTool(name=name, parameters_json_schema=copy.deepcopy(schema), description='A tool.', strict=strict)
        for name, schema, strict in TOOLS
    ]
    server.replies.clear()
    server.queue(fixture('anthropic_stream.json'))  # the reference streams a request this large
    history_ = model.prepare_messages(ReferenceTA.validate_json(json.dumps(messages)))
    await model.request(history_, dict(settings), ReferenceParameters(function_tools=tools))  # type: ignore[arg-type]
    return server.bodies()[-1]


async def _outcome(make: Any, server: ProviderServer, messages: list[dict[str, Any]], settings: dict[str, Any]) -> Any:
    try:
        return FOLD['anthropic'](await make(server, messages, settings))
    except Exception as error:  # each side's own UserError: refused before sending, by both
        if type(error).__name__ != 'UserError':
            raise
        return 'refused'


@pytest.mark.parametrize('settings', SETTINGS, ids=lambda s: json.dumps(s, sort_keys=True))
async def test_cache_breakpoints_are_placed_as_the_reference_places_them(
    server: ProviderServer, settings: dict[str, Any]
) -> None:
    differing = []
    for seed in range(24):
        messages = history(seed, 'anthropic', audio=False, urls=False)
        ours, reference = (
            await _outcome(_ours, server, messages, settings),
            await _outcome(_reference, server, messages, settings),
        )
        if ours != reference:
            differing.append((seed, ours, reference))
    assert not differing, differing[:2]


async def test_more_cache_points_than_the_api_takes_are_trimmed_oldest_first(server: ProviderServer) -> None:
    content = [item for text in 'abcde' for item in (text, {'kind': 'cache-point'})]  # five of them
    prompt = {'part_kind': 'user-prompt', 'content': content}
    messages = [{'kind': 'request', 'parts': [{'part_kind': 'system-prompt', 'content': 'Be brief.'}, prompt]}]
    for settings in ({}, {'cache': True}, {'anthropic_cache_messages': True, 'anthropic_cache_instructions': True}):
        ours = await _outcome(_ours, server, messages, settings)
        assert ours == await _outcome(_reference, server, messages, settings), settings
        assert json.dumps(ours).count('cache_control') == 4  # the oldest message ones went


@pytest.mark.parametrize('settings', REFUSED, ids=lambda s: json.dumps(s, sort_keys=True))
async def test_settings_the_api_would_refuse_are_refused_first(
    server: ProviderServer, settings: dict[str, Any]
) -> None:
    messages = history(0, 'anthropic', audio=False, urls=False)
    assert await _outcome(_ours, server, messages, settings) == 'refused'
    assert await _outcome(_reference, server, messages, settings) == 'refused'
