"""What Threadline sends a provider equals what pydantic-ai 2.62 sends, for the same history:
OpenAI Chat Completions, Anthropic Messages and Gemini (generateContent).

For 100 random histories per provider (`_histories`), both libraries make one request through
the official SDK to a local server that records the body; each prepares the history its own way
first, as its agent does. Forms the API defines as equivalent are folded before comparing:
- JSON arguments of a tool call compared as JSON, not as text (whitespace);
- Chat Completions: `stream: false` and `tool_choice: "auto"` are the defaults;
- Gemini: nothing (the bodies are equal as sent);
- Anthropic: a string `system` or content is one text block; `is_error: false` is the default;
  consecutive turns of one role are one turn (the API merges them); `tool_choice: {"type":
  "auto"}` is the default; streaming or not is the transport, not the request.

Gemini histories hold no URLs: the reference downloads a URL and sends its bytes, Threadline sends
it as a `file_data` URI (no download from the server running the agent).

Differences that remain on purpose (each folded here, and why):
- Chat Completions, a `CachePoint`: Threadline sends OpenAI's explicit `prompt_cache_breakpoint`
  on the block before it; the reference drops cache points for Chat Completions.
- Chat Completions, a PDF's `filename`: Threadline names it by the content's identifier, so two
  documents in one request can be told apart; the reference calls every one `filename.pdf`.
- Anthropic, `max_tokens`: Threadline sends 4096 unless set; the reference sends the model's
  maximum output (it always streams, and the API refuses a large `max_tokens` without streaming).
- Anthropic, block order in a user turn: Threadline puts `tool_result` blocks first, which the
  API requires; the reference keeps part order, so a mid-conversation system prompt before the
  results is sent ahead of them (the API answers 400).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.compat._histories import history
from tests.models.providers.server import ProviderServer, fixture
from threadline.messages import ModelMessagesTypeAdapter, repair_messages
from threadline.models import ModelRequestParameters, ToolDefinition, render_history

pytest.importorskip('pydantic_ai')

SEEDS = range(100)
WEATHER = {
    'type': 'object',
    'properties': {'city': {'type': 'string', 'description': 'City name'}},
    'required': ['city'],
    'additionalProperties': False,
}
FORECAST = {  # an optional argument with a default: not strict-compatible
    'title': 'forecast_args',
    'type': 'object',
    'properties': {'city': {'title': 'City', 'type': 'string'}, 'days': {'default': 3, 'type': 'integer'}},
    'required': ['city'],
}
PLAN = {  # a nested model behind a `$ref` with a sibling description, and a formatted string
    '$defs': {
        'Stop': {
            'title': 'Stop',
            'type': 'object',
            'properties': {'city': {'type': 'string'}, 'on': {'type': 'string', 'format': 'date'}},
            'required': ['city', 'on'],
            'additionalProperties': False,
        }
    },
    'type': 'object',
    'properties': {'first': {'$ref': '#/$defs/Stop', 'description': 'Where to start'}},
    'required': ['first'],
    'additionalProperties': False,
}
TAGS = {'type': 'object', 'properties': {'tags': {'type': 'array', 'items': {}}}, 'required': ['tags']}
TOOLS = [  # (name, schema, strict)
    ('get_weather', WEATHER, None),
    ('forecast', FORECAST, None),
    ('plan', PLAN, None),
    ('tag', TAGS, None),
    ('forecast_strict', FORECAST, True),
    ('weather_loose', WEATHER, False),
]


@pytest.fixture(scope='module')
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


async def _ours(
    server: ProviderServer, provider: str, messages: list[dict[str, Any]], gemini: str = 'gemini-2.5-flash'
) -> dict[str, Any]:
    if provider == 'openai':
        from threadline.models.openai import OpenAIChatModel, OpenAIProvider

        model: Any = OpenAIChatModel(
            'gpt-5.2', provider=OpenAIProvider(base_url=server.url + '/v1', api_key='k', max_retries=0)
        )
        server.queue(fixture('openai_text.json'))
    elif provider == 'openai-responses':
        from threadline.models.openai import OpenAIProvider
        from threadline.models.openai_responses import OpenAIResponsesModel

        model = OpenAIResponsesModel(
            'gpt-5.2', provider=OpenAIProvider(base_url=server.url + '/v1', api_key='k', max_retries=0)
        )
        server.queue(fixture('openai_responses_text.json'))
    elif provider == 'google':
        from threadline.models.google import GoogleModel, GoogleProvider

        model = GoogleModel(gemini, provider=GoogleProvider(api_key='k', base_url=server.url))
        server.queue(fixture('gemini_text.json'))
    else:
        from threadline.models.anthropic import AnthropicModel, AnthropicProvider

        model = AnthropicModel(
            'claude-sonnet-4-6', provider=AnthropicProvider(base_url=server.url, api_key='k', max_retries=0)
        )
        server.queue(fixture('anthropic_text.json'))
    tools = [ToolDefinition(name, copy.deepcopy(schema), 'A tool.', strict=strict) for name, schema, strict in TOOLS]
    history_ = ModelMessagesTypeAdapter.validate_json(json.dumps(messages))
    prepared, _ = render_history(repair_messages(history_), model.profile)
    await model.request(prepared, None, ModelRequestParameters(function_tools=tools))
    return server.bodies()[-1]


async def _reference(
    server: ProviderServer, provider: str, messages: list[dict[str, Any]], gemini: str = 'gemini-2.5-flash'
) -> dict[str, Any]:
    from pydantic_ai import ModelMessagesTypeAdapter as ReferenceTA
    from pydantic_ai.models import ModelRequestParameters as ReferenceParameters
    from pydantic_ai.tools import ToolDefinition as ReferenceTool

    if provider == 'openai':
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        model: Any = OpenAIChatModel('gpt-5.2', provider=OpenAIProvider(base_url=server.url + '/v1', api_key='k'))
        server.queue(fixture('openai_text.json'))
    elif provider == 'openai-responses':
        from pydantic_ai.models.openai import OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        model = OpenAIResponsesModel('gpt-5.2', provider=OpenAIProvider(base_url=server.url + '/v1', api_key='k'))
        server.queue(fixture('openai_responses_text.json'))
    elif provider == 'google':
        from pydantic_ai.models.google import GoogleModel
        from pydantic_ai.providers.google import GoogleProvider

        model = GoogleModel(gemini, provider=GoogleProvider(api_key='k', base_url=server.url))
        server.queue(fixture('gemini_text.json'))
    else:
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        model = AnthropicModel('claude-sonnet-4-6', provider=AnthropicProvider(base_url=server.url, api_key='k'))
        server.queue(fixture('anthropic_stream.json'))  # the reference streams every Anthropic request
    tools = [
        ReferenceTool(name=name, parameters_json_schema=copy.deepcopy(schema), description='A tool.', strict=strict)
        for name, schema, strict in TOOLS
    ]
    history_ = model.prepare_messages(ReferenceTA.validate_json(json.dumps(messages)))
    await model.request(history_, None, ReferenceParameters(function_tools=tools))
    return server.bodies()[-1]


def _same_json(text: str) -> str:
    try:
        return json.dumps(json.loads(text), separators=(',', ':'))
    except ValueError:
        return text


def _fold_openai(body: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(body)
    if body.get('stream') is False:
        del body['stream']
    if body.get('tool_choice') == 'auto':
        del body['tool_choice']
    for message in body['messages']:
        for call in message.get('tool_calls') or []:
            call['function']['arguments'] = _same_json(call['function']['arguments'])
        for item in message['content'] if isinstance(message.get('content'), list) else []:
            item.pop('prompt_cache_breakpoint', None)
            if item.get('type') == 'file' and 'filename' in item['file']:
                item['file']['filename'] = 'document.pdf'
    return body


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{'type': 'text', 'text': content}] if isinstance(content, str) else list(content)


def _fold_anthropic(body: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(body)
    for key in ('stream', 'max_tokens'):
        body.pop(key, None)
    if body.get('tool_choice') == {'type': 'auto'}:
        del body['tool_choice']
    if 'system' in body:
        body['system'] = _blocks(body['system'])
    turns: list[dict[str, Any]] = []
    for message in body['messages']:
        blocks = _blocks(message['content'])
        for block in blocks:
            if block.get('is_error') is False:
                del block['is_error']
            if block.get('type') == 'tool_result':
                block['content'] = _blocks(block['content'])
        if turns and turns[-1]['role'] == message['role']:
            turns[-1]['content'] += blocks
        else:
            turns.append({'role': message['role'], 'content': blocks})
    for turn in turns:
        results = [b for b in turn['content'] if b.get('type') == 'tool_result']
        turn['content'] = results + [b for b in turn['content'] if b.get('type') != 'tool_result']
    body['messages'] = turns
    return body


def _fold_responses(body: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(body)
    if body.get('stream') is False:
        del body['stream']
    if body.get('tool_choice') == 'auto':
        del body['tool_choice']
    for item in body['input']:
        if item.get('type') == 'function_call':
            item['arguments'] = _same_json(item['arguments'])
        for content in item['content'] if isinstance(item.get('content'), list) else []:
            if content.get('type') == 'input_file' and 'filename' in content:
                content['filename'] = 'document.pdf'
    return body


def _fold_google(body: dict[str, Any]) -> dict[str, Any]:
    return body


FOLD: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    'openai': _fold_openai,
    'anthropic': _fold_anthropic,
    'google': _fold_google,
    'openai-responses': _fold_responses,
}


async def _bodies(server: ProviderServer, provider: str, seed: int) -> tuple[Any, Any]:
    name = 'openai' if provider == 'openai-responses' else provider  # the name responses carry
    messages = history(seed, name, audio=provider == 'openai', urls=provider != 'google')
    return FOLD[provider](await _ours(server, provider, messages)), FOLD[provider](
        await _reference(server, provider, messages)
    )


@pytest.mark.parametrize('provider', ['openai', 'openai-responses', 'anthropic', 'google'])
async def test_request_bodies_match_the_reference(server: ProviderServer, provider: str) -> None:
    differing = []
    for seed in SEEDS:
        ours, reference = await _bodies(server, provider, seed)
        if ours != reference:
            differing.append((seed, [k for k in sorted(set(ours) | set(reference)) if ours.get(k) != reference.get(k)]))
    assert not differing, f'{len(differing)} of {len(SEEDS)} histories differ (seed, keys): {differing[:5]}'


async def test_strict_tools_follow_the_reference(server: ProviderServer) -> None:
    ours, reference = await _bodies(server, 'openai', 0)
    strict = {t['function']['name']: t['function'].get('strict') for t in ours['tools']}
    assert strict == {
        'get_weather': True,
        'forecast': None,  # a default: strict mode would refuse the schema
        'plan': True,
        'tag': None,  # an untyped array
        'forecast_strict': True,  # rewritten to fit
        'weather_loose': None,  # opted out
    }
    rewritten = next(t['function']['parameters'] for t in ours['tools'] if t['function']['name'] == 'forecast_strict')
    assert rewritten['required'] == ['city', 'days'] and 'default' not in rewritten['properties']['days']
    assert ours['tools'] == reference['tools']


async def test_anthropic_strict_tools_follow_the_reference(server: ProviderServer) -> None:
    ours, reference = await _bodies(server, 'anthropic', 0)
    strict = {t['name']: t.get('strict') for t in ours['tools']}
    assert strict['forecast_strict'] is True  # asked for: rewritten by the SDK's transform_schema
    assert {name for name, value in strict.items() if value} == {'forecast_strict'}  # never by default
    assert ours['tools'] == reference['tools']


@pytest.mark.parametrize(
    ('provider', 'gemini'),
    [
        ('openai', ''),
        ('openai-responses', ''),
        ('anthropic', ''),
        ('google', 'gemini-2.5-flash'),
        ('google', 'gemini-3-pro-preview'),
    ],
)
async def test_a_tools_files_reach_the_model_as_files(server: ProviderServer, provider: str, gemini: str) -> None:
    """A tool that returns an image: Chat Completions' tool messages take text only, so the
        reference references each file in the result ('See file ...') and sends it in a user message
        after the request's results, framed by the call it came from; the Responses and Messages APIs
        take files in a tool result, so it goes there, beside the text, in order; Gemini 3 reads an image
    inside a `function_response`, Gemini 2.5 after it, framed. So does Threadline."""
    from threadline import BinaryContent
    from threadline.messages import ModelMessagesTypeAdapter as OursTA
    from threadline.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart, UserPromptPart

    image = BinaryContent(b'\x89PNG\r\n\x1a\n', media_type='image/png')
    history_ = [
        ModelRequest([UserPromptPart('draw it')]),
        ModelResponse([ToolCallPart('draw', {'what': 'cat'}, 'c1'), ToolCallPart('draw', {'what': 'dog'}, 'c2')]),
        ModelRequest(
            [ToolReturnPart('draw', ['here it is', image], 'c1'), ToolReturnPart('draw', image, 'c2', outcome='failed')]
        ),
    ]
    messages = json.loads(OursTA.dump_json(history_))
    ours = await _ours(server, provider, messages, gemini or 'gemini-2.5-flash')
    reference = await _reference(server, provider, messages, gemini or 'gemini-2.5-flash')
    assert FOLD[provider](ours) == FOLD[provider](reference)
    last = ours['input'][-1] if provider == 'openai-responses' else ours.get('contents', ours.get('messages'))[-1]
    assert 'image' in json.dumps(last)
