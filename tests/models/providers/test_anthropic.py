"""`AnthropicModel` against a local server speaking the Messages wire format.

Every request the official `anthropic` client sends is recorded and validated against the SDK's own
`MessageCreateParams`; responses and streams come from the fixtures (each names its source).
"""

from __future__ import annotations

import pytest

from tests.models.providers.conftest import anthropic_model, assert_valid_anthropic, weather_agent
from tests.models.providers.server import ProviderServer, fixture
from threadline import Agent
from threadline.exceptions import UnexpectedModelBehavior, UserError
from threadline.messages import (
    AudioUrl,
    BinaryContent,
    CachePoint,
    DocumentUrl,
    ImageUrl,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UploadedFile,
    UserPromptPart,
)
from threadline.models import ModelHTTPError
from threadline.models.anthropic import AnthropicModel

HISTORY = [
    ModelRequest(parts=[SystemPromptPart('STANDING'), UserPromptPart('q1')]),
    ModelResponse(parts=[TextPart('a1')]),
    ModelRequest(parts=[UserPromptPart('q2'), SystemPromptPart('MID')]),
]


async def test_a_tool_run_round_trips_through_the_sdk(server: ProviderServer) -> None:
    server.queue(fixture('anthropic_tool_use.json'), fixture('anthropic_text.json'))
    result = await weather_agent(anthropic_model(server)).run('Weather in Paris?')

    assert result.output == 'It is sunny in Paris.'
    first, second = server.bodies()
    for body in (first, second):
        assert_valid_anthropic(body)
    assert first['system'] == [
        {'type': 'text', 'text': 'You are a weather bot.'},
        {'type': 'text', 'text': 'Be brief.'},
    ]
    assert first['messages'] == [{'role': 'user', 'content': [{'type': 'text', 'text': 'Weather in Paris?'}]}]
    assert first['tools'] == [
        {
            'name': 'get_weather',
            'description': 'The current weather in a city.',
            'input_schema': {
                'type': 'object',
                'properties': {'city': {'type': 'string'}},
                'required': ['city'],
                'additionalProperties': False,
            },
        }
    ]
    # The thinking block goes back with its signature, ahead of the tool_use it led to.
    assert second['messages'][1:] == [
        {
            'role': 'assistant',
            'content': [
                {
                    'type': 'thinking',
                    'thinking': 'The user wants the weather; I should call the tool.',
                    'signature': 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds',
                },
                {'type': 'text', 'text': 'Let me check.'},
                {
                    'type': 'tool_use',
                    'id': 'toolu_01A09q90qw90lq917835lq9',
                    'name': 'get_weather',
                    'input': {'city': 'Paris'},
                },
            ],
        },
        {
            'role': 'user',
            'content': [
                {'type': 'tool_result', 'tool_use_id': 'toolu_01A09q90qw90lq917835lq9', 'content': 'sunny in Paris'}
            ],
        },
    ]
    assert server.requests[0]['path'] == '/v1/messages'
    headers = server.requests[0]['headers']  # SDK 2.x authenticates with a bearer token, 0.x with x-api-key
    assert 'test-key' in (headers.get('x-api-key'), headers.get('authorization', '').removeprefix('Bearer '))


async def test_response_mapping(server: ProviderServer) -> None:
    server.queue(fixture('anthropic_tool_use.json'), fixture('anthropic_text.json'))
    result = await weather_agent(anthropic_model(server)).run('Weather in Paris?')
    call, text = result.all_messages()[1], result.all_messages()[3]
    assert isinstance(call, ModelResponse) and isinstance(text, ModelResponse)
    assert call.parts == [
        ThinkingPart(
            'The user wants the weather; I should call the tool.',
            signature='EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds',
            provider_name='anthropic',
        ),
        TextPart('Let me check.'),
        ToolCallPart('get_weather', {'city': 'Paris'}, 'toolu_01A09q90qw90lq917835lq9'),
    ]
    assert (call.finish_reason, text.finish_reason) == ('tool_call', 'stop')
    assert (call.provider_name, call.model_name, call.provider_response_id) == (
        'anthropic',
        'claude-sonnet-4-5-20250929',
        'msg_01Aq9w938a90dw8q',
    )
    assert (call.usage.input_tokens, call.usage.output_tokens, call.usage.cache_read_tokens) == (472, 91, 256)
    assert text.usage.cache_write_tokens == 128


async def test_mid_conversation_system_prompt_on_a_model_without_inline_support(server: ProviderServer) -> None:
    server.queue(fixture('anthropic_text.json'))
    await Agent(anthropic_model(server, 'claude-sonnet-4-6'), instructions='INSTR').run(message_history=HISTORY)
    body = server.bodies()[0]
    assert_valid_anthropic(body)
    assert body['system'] == [{'type': 'text', 'text': 'STANDING'}, {'type': 'text', 'text': 'INSTR'}]
    assert body['messages'] == [
        {'role': 'user', 'content': [{'type': 'text', 'text': 'q1'}]},
        {'role': 'assistant', 'content': [{'type': 'text', 'text': 'a1'}]},
        {'role': 'user', 'content': [{'type': 'text', 'text': 'q2'}, {'type': 'text', 'text': '<system>MID</system>'}]},
    ]


async def test_mid_conversation_system_prompt_on_an_inline_capable_model(server: ProviderServer) -> None:
    history = [
        ModelRequest(parts=[SystemPromptPart('STANDING'), UserPromptPart('q1')]),
        ModelResponse(parts=[TextPart('a1')]),
        ModelRequest(parts=[SystemPromptPart('EARLY'), UserPromptPart('q2')]),
        ModelResponse(parts=[TextPart('a2')]),
        ModelRequest(parts=[UserPromptPart('q3'), SystemPromptPart('MID')]),
    ]
    server.queue(fixture('anthropic_text.json'))
    await Agent(anthropic_model(server, 'claude-opus-5'), instructions='INSTR').run(message_history=history)
    body = server.bodies()[0]
    assert_valid_anthropic(body)
    assert body['system'] == [{'type': 'text', 'text': 'STANDING'}, {'type': 'text', 'text': 'INSTR'}]
    # System entries slide forward past user turns to just before the next assistant turn.
    assert body['messages'] == [
        {'role': 'user', 'content': [{'type': 'text', 'text': 'q1'}]},
        {'role': 'assistant', 'content': [{'type': 'text', 'text': 'a1'}]},
        {'role': 'user', 'content': [{'type': 'text', 'text': 'q2'}]},
        {'role': 'system', 'content': [{'type': 'text', 'text': 'EARLY'}]},
        {'role': 'assistant', 'content': [{'type': 'text', 'text': 'a2'}]},
        {'role': 'user', 'content': [{'type': 'text', 'text': 'q3'}]},
        {'role': 'system', 'content': [{'type': 'text', 'text': 'MID'}]},
    ]


async def test_tool_results_errors_interruptions_and_cut_off_arguments(server: ProviderServer) -> None:
    history = [
        ModelRequest(parts=[UserPromptPart('go')]),
        ModelResponse(
            parts=[
                ToolCallPart('refund', {'order': 1}, 'c1'),
                ToolCallPart('refund', '{"order": 2', 'c2'),
                ToolCallPart('lookup', '{"q": "x"}', 'c3'),
            ]
        ),
        ModelRequest(
            parts=[
                UserPromptPart('and now?'),
                ToolReturnPart('refund', 'payment service down', 'c1', outcome='failed'),
                ToolReturnPart('refund', 'the arguments were not valid JSON', 'c2', outcome='retried'),
                ToolReturnPart('lookup', 'Tool call was interrupted before it returned.', 'c3', outcome='interrupted'),
            ]
        ),
    ]
    server.queue(fixture('anthropic_text.json'))
    await Agent(anthropic_model(server)).run(message_history=history)
    body = server.bodies()[0]
    assert_valid_anthropic(body)
    assert body['messages'][1]['content'][1]['input'] == {'INVALID_JSON': '{"order": 2'}
    # Tool results come first in the user turn, as the API requires; an error is its text.
    assert body['messages'][2]['content'] == [
        {
            'type': 'tool_result',
            'tool_use_id': 'c1',
            'content': [{'type': 'text', 'text': 'payment service down'}],
            'is_error': True,
        },
        {
            'type': 'tool_result',
            'tool_use_id': 'c2',
            'content': [{'type': 'text', 'text': 'the arguments were not valid JSON'}],
            'is_error': True,
        },
        {'type': 'tool_result', 'tool_use_id': 'c3', 'content': 'Tool call was interrupted before it returned.'},
        {'type': 'text', 'text': 'and now?'},
    ]


async def test_user_content_blocks_and_cache_points(server: ProviderServer) -> None:
    png = BinaryContent(b'\x89PNG fake', media_type='image/png')
    pdf = BinaryContent(b'%PDF-1.7 fake', media_type='application/pdf')
    text = BinaryContent(b'plain notes', media_type='text/plain')
    content = [
        'look',
        CachePoint(ttl='1h'),
        ImageUrl('https://example.com/a.png'),
        png,
        DocumentUrl('https://example.com/a.pdf'),
        pdf,
        text,
        UploadedFile('file_01', 'anthropic', media_type='application/pdf'),
    ]
    server.queue(fixture('anthropic_text.json'))
    await Agent(anthropic_model(server)).run(content)
    body = server.bodies()[0]
    assert_valid_anthropic(body)
    assert body['messages'][0]['content'] == [
        {'type': 'text', 'text': 'look', 'cache_control': {'type': 'ephemeral', 'ttl': '1h'}},
        {'type': 'image', 'source': {'type': 'url', 'url': 'https://example.com/a.png'}},
        {'type': 'image', 'source': {'type': 'base64', 'media_type': 'image/png', 'data': png.base64}},
        {'type': 'document', 'source': {'type': 'url', 'url': 'https://example.com/a.pdf'}},
        {'type': 'document', 'source': {'type': 'base64', 'media_type': 'application/pdf', 'data': pdf.base64}},
        {'type': 'document', 'source': {'type': 'text', 'media_type': 'text/plain', 'data': 'plain notes'}},
        {'type': 'document', 'source': {'type': 'file', 'file_id': 'file_01'}},
    ]


@pytest.mark.parametrize(
    'item',
    [
        AudioUrl('https://example.com/a.mp3'),
        BinaryContent(b'RIFF', media_type='audio/wav'),
        UploadedFile('file-1', 'openai'),
    ],
)
async def test_content_the_api_cannot_take_is_refused_before_sending(server: ProviderServer, item: object) -> None:
    history = [ModelRequest(parts=[UserPromptPart(['hear this', item])])]  # type: ignore[list-item]
    with pytest.raises(UserError, match=r'messages\[0\]\.parts\[0\]: the anthropic provider cannot take'):
        await Agent(anthropic_model(server)).run(message_history=history)
    assert server.requests == []


async def test_native_tool_parts_go_back_untouched_and_foreign_thinking_is_dropped(server: ProviderServer) -> None:
    search_result = {
        'type': 'web_search_tool_result',
        'tool_use_id': 'srvtoolu_1',
        'content': [
            {'type': 'web_search_result', 'url': 'https://example.com', 'title': 'Example', 'encrypted_content': 'abc'}
        ],
    }
    history = [
        ModelRequest(parts=[UserPromptPart('search')]),
        ModelResponse(
            parts=[
                NativeToolCallPart('web_search', {'query': 'x'}, 'srvtoolu_1', provider_name='anthropic'),
                NativeToolReturnPart('web_search_tool_result', search_result, 'srvtoolu_1', provider_name='anthropic'),
                TextPart('found it'),
            ],
            provider_name='anthropic',
        ),
        ModelRequest(parts=[UserPromptPart('q2')]),
        ModelResponse(
            parts=[
                ThinkingPart('openai reasoning'),
                NativeToolCallPart('web_search', {'query': 'cut'}, 'srvtoolu_2', provider_name='anthropic'),
                TextPart('a2'),
            ],
            provider_name='openai',
        ),
        ModelRequest(parts=[UserPromptPart('q3')]),
    ]
    server.queue(fixture('anthropic_text.json'))
    await Agent(anthropic_model(server)).run(message_history=history)
    body = server.bodies()[0]
    assert_valid_anthropic(body)
    assert body['messages'][1]['content'] == [
        {'type': 'server_tool_use', 'id': 'srvtoolu_1', 'name': 'web_search', 'input': {'query': 'x'}},
        search_result,
        {'type': 'text', 'text': 'found it'},
    ]
    assert body['messages'][3]['content'] == [{'type': 'text', 'text': 'a2'}]


async def test_streaming_text_with_usage_at_the_end(server: ProviderServer) -> None:
    server.queue(fixture('anthropic_stream.json'))
    async with Agent(anthropic_model(server)).run_stream('hi') as stream:
        deltas = [d async for d in stream.stream_text(delta=True)]
    assert ''.join(deltas) == 'Hello there'
    body = server.bodies()[0]
    assert body['stream'] is True
    assert_valid_anthropic(body)
    response = stream.all_messages()[-1]
    assert isinstance(response, ModelResponse)
    assert response.parts == [TextPart('Hello there')]
    assert (response.usage.input_tokens, response.usage.output_tokens) == (25, 15)
    assert (response.finish_reason, response.provider_response_id) == ('stop', 'msg_stream_1')


async def test_streaming_thinking_with_signature_and_tool_use(server: ProviderServer) -> None:
    server.queue(fixture('anthropic_stream_tool_use.json'), fixture('anthropic_stream.json'))
    events = [event async for event in weather_agent(anthropic_model(server)).run_stream_events('Weather in Paris?')]
    result = events[-1].result  # type: ignore[attr-defined]
    call = result.all_messages()[1]
    assert call.parts == [
        ThinkingPart('I need the weather tool.', signature='EqQBCgIYAhIMstream', provider_name='anthropic'),
        ToolCallPart('get_weather', '{"city": "Paris"}', 'toolu_stream_1'),
    ]
    assert (call.usage.input_tokens, call.usage.output_tokens, call.usage.cache_read_tokens) == (400, 89, 300)
    assert call.finish_reason == 'tool_call'
    assert result.output == 'Hello there'
    second = server.bodies()[1]
    assert_valid_anthropic(second)
    assert second['messages'][1]['content'][0] == {
        'type': 'thinking',
        'thinking': 'I need the weather tool.',
        'signature': 'EqQBCgIYAhIMstream',
    }


async def test_http_errors_become_model_http_error(server: ProviderServer) -> None:
    server.queue(fixture('anthropic_overloaded.json'))
    with pytest.raises(ModelHTTPError) as info:
        await Agent(anthropic_model(server)).run('hi')
    assert (info.value.status_code, info.value.model_name) == (529, 'claude-sonnet-4-6')
    assert info.value.body['error']['type'] == 'overloaded_error'


async def test_an_unparsable_response_keeps_the_raw_body(server: ProviderServer) -> None:
    server.queue({'status': 200, 'body': '<html>bad gateway</html>'})
    with pytest.raises(UnexpectedModelBehavior) as info:
        await Agent(anthropic_model(server)).run('hi')
    assert info.value.body == '<html>bad gateway</html>'


async def test_a_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv('ANTHROPIC_API_KEY', raising=False)
    with pytest.raises(UserError, match='set ANTHROPIC_API_KEY'):
        await Agent('anthropic:claude-sonnet-4-6').run('hi')


def test_model_string_and_profile() -> None:
    assert AnthropicModel('claude-opus-5').profile.supports_inline_system_prompts
    assert not AnthropicModel('claude-sonnet-4-6').profile.supports_inline_system_prompts
