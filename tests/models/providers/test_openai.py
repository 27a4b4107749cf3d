"""`OpenAIChatModel` against a local server speaking the Chat Completions wire format.

Every request the official `openai` client sends is recorded and validated against the SDK's own
`CompletionCreateParams`; responses and streams come from the fixtures (each names its source).
"""

from __future__ import annotations

import pytest

from tests.models.providers.conftest import assert_valid_openai, openai_model, weather_agent
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
    PartDeltaEvent,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UploadedFile,
    UserPromptPart,
)
from threadline.models import ModelHTTPError
from threadline.models.openai import OpenAIChatModel

HISTORY = [
    ModelRequest(parts=[SystemPromptPart('STANDING'), UserPromptPart('q1')]),
    ModelResponse(parts=[TextPart('a1')]),
    ModelRequest(parts=[UserPromptPart('q2'), SystemPromptPart('MID')]),
]


async def test_a_tool_run_round_trips_through_the_sdk(server: ProviderServer) -> None:
    server.queue(fixture('openai_tool_call.json'), fixture('openai_text.json'))
    result = await weather_agent(openai_model(server)).run('Weather in Paris?')

    assert result.output == 'It is sunny in Paris.'
    first, second = server.bodies()
    for body in (first, second):
        assert_valid_openai(body)
    assert first['messages'] == [
        {'role': 'system', 'content': 'You are a weather bot.'},
        {'role': 'system', 'content': 'Be brief.'},
        {'role': 'user', 'content': 'Weather in Paris?'},
    ]
    assert first['tools'] == [
        {
            'type': 'function',
            'function': {
                'name': 'get_weather',
                'description': 'The current weather in a city.',
                'parameters': {
                    'type': 'object',
                    'properties': {'city': {'type': 'string'}},
                    'required': ['city'],
                    'additionalProperties': False,
                },
                'strict': True,
            },
        }
    ]
    assert second['messages'][3:] == [
        {
            'role': 'assistant',
            'content': None,
            'tool_calls': [
                {
                    'id': 'call_abc123',
                    'type': 'function',
                    'function': {'name': 'get_weather', 'arguments': '{"city": "Paris"}'},
                }
            ],
        },
        {'role': 'tool', 'tool_call_id': 'call_abc123', 'content': 'sunny in Paris'},
    ]
    assert server.requests[0]['path'] == '/v1/chat/completions'
    assert server.requests[0]['headers']['authorization'] == 'Bearer test-key'


async def test_response_mapping(server: ProviderServer) -> None:
    server.queue(fixture('openai_tool_call.json'), fixture('openai_text.json'))
    result = await weather_agent(openai_model(server)).run('Weather in Paris?')
    call, text = result.all_messages()[1], result.all_messages()[3]

    assert isinstance(call, ModelResponse) and isinstance(text, ModelResponse)
    assert call.parts == [ToolCallPart('get_weather', '{"city": "Paris"}', 'call_abc123')]
    assert call.finish_reason == 'tool_call' and text.finish_reason == 'stop'
    assert (call.provider_name, call.model_name, call.provider_response_id) == (
        'openai',
        'gpt-5.2-2026-01-01',
        'chatcmpl-tool-1',
    )
    assert (call.usage.input_tokens, call.usage.output_tokens, call.usage.cache_read_tokens) == (82, 17, 64)
    assert text.usage.output_reasoning_tokens == 4
    assert result.usage.input_tokens == 82 + 120


async def test_mid_conversation_system_prompt_stays_in_place(server: ProviderServer) -> None:
    server.queue(fixture('openai_text.json'))
    agent = Agent(openai_model(server), instructions='INSTR')
    await agent.run(message_history=HISTORY)
    body = server.bodies()[0]
    assert_valid_openai(body)
    assert body['messages'] == [
        {'role': 'system', 'content': 'STANDING'},
        {'role': 'system', 'content': 'INSTR'},
        {'role': 'user', 'content': 'q1'},
        {'role': 'assistant', 'content': 'a1'},
        {'role': 'user', 'content': 'q2'},
        {'role': 'system', 'content': 'MID'},
    ]


async def test_system_prompt_role_is_configurable(server: ProviderServer) -> None:
    server.queue(fixture('openai_text.json'))
    await Agent(openai_model(server, system_prompt_role='developer')).run(message_history=HISTORY)
    body = server.bodies()[0]
    assert_valid_openai(body)
    assert [m['role'] for m in body['messages']] == ['developer', 'user', 'assistant', 'user', 'developer']


async def test_tool_results_errors_interruptions_and_cut_off_arguments(server: ProviderServer) -> None:
    history = [
        ModelRequest(parts=[UserPromptPart('go')]),
        ModelResponse(
            parts=[
                ToolCallPart('refund', {'order': 1}, 'c1'),
                ToolCallPart('refund', '{"order": 2', 'c2'),  # cut off mid-stream
                ToolCallPart('lookup', '{"q": "x"}', 'c3'),
            ]
        ),
        ModelRequest(
            parts=[
                ToolReturnPart('refund', 'payment service down', 'c1', outcome='failed'),
                ToolReturnPart('refund', 'the arguments were not valid JSON', 'c2', outcome='retried'),
                ToolReturnPart('lookup', 'Tool call was interrupted before it returned.', 'c3', outcome='interrupted'),
                UserPromptPart('and now?'),
            ]
        ),
    ]
    server.queue(fixture('openai_text.json'))
    await Agent(openai_model(server)).run(message_history=history)
    body = server.bodies()[0]
    assert_valid_openai(body)
    assert body['messages'][1]['tool_calls'][1]['function']['arguments'] == '{"INVALID_JSON":"{\\"order\\": 2"}'
    assert body['messages'][2:5] == [
        {'role': 'tool', 'tool_call_id': 'c1', 'content': '{"error":"payment service down"}'},
        {'role': 'tool', 'tool_call_id': 'c2', 'content': '{"error":"the arguments were not valid JSON"}'},
        {'role': 'tool', 'tool_call_id': 'c3', 'content': 'Tool call was interrupted before it returned.'},
    ]


async def test_user_content_blocks_and_cache_points(server: ProviderServer) -> None:
    png = BinaryContent(b'\x89PNG fake', media_type='image/png')
    pdf = BinaryContent(b'%PDF-1.7 fake', media_type='application/pdf', identifier='invoice')
    wav = BinaryContent(b'RIFF fake', media_type='audio/wav')
    content = [
        'look',
        ImageUrl('https://example.com/a.png'),
        png,
        pdf,
        wav,
        CachePoint(),
        UploadedFile('file-abc', 'openai', media_type='application/pdf'),
    ]
    server.queue(fixture('openai_text.json'))
    await Agent(openai_model(server)).run(content)
    body = server.bodies()[0]
    assert_valid_openai(body)
    assert body['messages'][0]['content'] == [
        {'type': 'text', 'text': 'look'},
        {'type': 'image_url', 'image_url': {'url': 'https://example.com/a.png'}},
        {'type': 'image_url', 'image_url': {'url': png.data_uri}},
        {'type': 'file', 'file': {'file_data': pdf.data_uri, 'filename': 'invoice.pdf'}},
        {
            'type': 'input_audio',
            'input_audio': {'data': wav.base64, 'format': 'wav'},
            'prompt_cache_breakpoint': {'mode': 'explicit'},
        },
        {'type': 'file', 'file': {'file_id': 'file-abc'}},
    ]


@pytest.mark.parametrize(
    'item',
    [
        DocumentUrl('https://example.com/a.pdf'),
        AudioUrl('https://example.com/a.mp3'),
        UploadedFile('file-1', 'anthropic'),
        BinaryContent(b'x', media_type='video/mp4'),
    ],
)
async def test_content_the_api_cannot_take_is_refused_before_sending(server: ProviderServer, item: object) -> None:
    history = [
        ModelRequest(parts=[UserPromptPart('hi')]),
        ModelResponse(parts=[TextPart('hello')]),
        ModelRequest(parts=[UserPromptPart(['see', item])]),
    ]  # type: ignore[list-item]
    with pytest.raises(UserError, match=r'messages\[2\]\.parts\[0\]: the openai provider .* cannot take'):
        await Agent(openai_model(server)).run(message_history=history)
    assert server.requests == []


async def test_thinking_from_another_provider_goes_back_as_tagged_text(server: ProviderServer) -> None:
    history = [
        ModelRequest(parts=[UserPromptPart('q')]),
        ModelResponse(
            parts=[ThinkingPart('hmm', signature='sig', provider_name='anthropic'), TextPart('a')],
            provider_name='anthropic',
        ),
        ModelRequest(parts=[UserPromptPart('q2')]),
    ]
    server.queue(fixture('openai_text.json'))
    await Agent(openai_model(server)).run(message_history=history)
    body = server.bodies()[0]
    assert_valid_openai(body)
    # As pydantic-ai does: Chat Completions has no thinking block, so the text says what it was.
    assert body['messages'][1] == {'role': 'assistant', 'content': '<think>\nhmm\n</think>\n\na'}


async def test_streaming_text_with_usage_at_the_end(server: ProviderServer) -> None:
    server.queue(fixture('openai_stream.json'))
    agent = Agent(openai_model(server))
    async with agent.run_stream('hi') as stream:
        deltas = [d async for d in stream.stream_text(delta=True)]
    assert ''.join(deltas) == 'Hello there'
    body = server.bodies()[0]
    assert body['stream'] is True and body['stream_options'] == {'include_usage': True}
    assert_valid_openai(body)
    response = stream.all_messages()[-1]
    assert isinstance(response, ModelResponse)
    assert response.parts == [TextPart('Hello there')]
    assert (response.usage.input_tokens, response.usage.output_tokens) == (15, 2)
    assert (response.finish_reason, response.provider_response_id) == ('stop', 'chatcmpl-stream-1')


async def test_streaming_tool_call_arguments(server: ProviderServer) -> None:
    server.queue(fixture('openai_stream_tool_call.json'), fixture('openai_stream.json'))
    agent = weather_agent(openai_model(server))
    events = [event async for event in agent.run_stream_events('Weather in Paris?')]
    deltas = [e for e in events if isinstance(e, PartDeltaEvent)]
    assert len(deltas) >= 2
    result = events[-1].result  # type: ignore[attr-defined]
    call = result.all_messages()[1]
    assert call.parts == [ToolCallPart('get_weather', '{"city": "Paris"}', 'call_stream_1')]
    assert result.all_messages()[2].parts[0].content == 'sunny in Paris'
    assert result.output == 'Hello there'
    assert [b['messages'][-1]['role'] for b in server.bodies()] == ['user', 'tool']


async def test_http_errors_become_model_http_error(server: ProviderServer) -> None:
    server.queue(fixture('openai_rate_limit.json'))
    with pytest.raises(ModelHTTPError) as info:
        await Agent(openai_model(server)).run('hi')
    assert info.value.status_code == 429
    assert info.value.model_name == 'gpt-5.2'
    assert info.value.body['code'] == 'rate_limit_exceeded'


async def test_rate_limits_are_retried_when_retries_are_on(server: ProviderServer) -> None:
    from threadline.models.openai import OpenAIProvider

    server.queue(
        {**fixture('openai_rate_limit.json'), 'headers': {'retry-after-ms': '10'}}, fixture('openai_text.json')
    )
    provider = OpenAIProvider(base_url=server.url + '/v1', api_key='k', max_retries=2)
    result = await Agent(OpenAIChatModel('gpt-5.2', provider=provider)).run('hi')
    assert result.output == 'It is sunny in Paris.'
    assert len(server.requests) == 2


async def test_an_unparsable_response_keeps_the_raw_body(server: ProviderServer) -> None:
    server.queue({'status': 200, 'body': 'this is not json'})
    with pytest.raises(UnexpectedModelBehavior) as info:
        await Agent(openai_model(server)).run('hi')
    assert 'this is not json' in str(info.value.body)


async def test_a_response_without_choices_is_unexpected(server: ProviderServer) -> None:
    server.queue(
        {'status': 200, 'body': {'id': 'x', 'object': 'chat.completion', 'created': 1, 'model': 'm', 'choices': []}}
    )
    with pytest.raises(UnexpectedModelBehavior, match='without a choice'):
        await Agent(openai_model(server)).run('hi')


async def test_model_string_reads_base_url_and_key_from_the_environment(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv('OPENAI_BASE_URL', server.url + '/v1')
    monkeypatch.setenv('OPENAI_API_KEY', 'env-key')
    server.queue(fixture('openai_text.json'), fixture('openai_text.json'))
    assert (await Agent('openai:gpt-5.2').run('hi')).output == 'It is sunny in Paris.'
    assert (await Agent('test').run('hi', model='openai:gpt-5.2')).output == 'It is sunny in Paris.'
    assert server.requests[0]['headers']['authorization'] == 'Bearer env-key'
    assert [b['model'] for b in server.bodies()] == ['gpt-5.2', 'gpt-5.2']


async def test_a_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv('OPENAI_API_KEY', raising=False)
    with pytest.raises(UserError, match='set OPENAI_API_KEY'):
        await Agent('openai:gpt-5.2').run('hi')


def test_a_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, 'openai', None)
    with pytest.raises(UserError, match=r"pip install 'threadline\[openai\]'"):
        OpenAIChatModel('gpt-5.2').provider  # noqa: B018 - the provider is built on first use


async def test_a_provider_with_its_own_httpx_client(server: ProviderServer) -> None:
    import httpx

    from threadline.models.openai import OpenAIProvider

    async with httpx.AsyncClient(headers={'x-team': 'support'}) as client:
        provider = OpenAIProvider(base_url=server.url + '/v1', api_key='k', http_client=client, max_retries=0)
        server.queue(fixture('openai_text.json'))
        await Agent(OpenAIChatModel('llama-3.3', provider=provider)).run('hi')
    assert server.requests[0]['headers']['x-team'] == 'support'
    assert server.bodies()[0]['model'] == 'llama-3.3'


async def test_reasoning_content_from_compatible_servers_becomes_thinking(server: ProviderServer) -> None:
    # vLLM and DeepSeek add `reasoning_content` beside `content` (vLLM docs, "Reasoning Outputs").
    reply = fixture('openai_text.json')
    reply['body']['choices'][0]['message']['reasoning_content'] = 'Paris is in France.'
    stream = fixture('openai_stream.json')
    first = stream['sse'][1].replace('"content":"Hello"', '"reasoning_content":"Think.","content":"Hello"')
    stream['sse'][1] = first
    server.queue(reply, stream)
    result = await Agent(openai_model(server)).run('hi')
    reasoning = ThinkingPart('Paris is in France.', id='reasoning_content', provider_name='openai')
    assert result.all_messages()[-1].parts == [reasoning, TextPart('It is sunny in Paris.')]
    async with Agent(openai_model(server)).run_stream('hi', message_history=result.all_messages()) as streamed:
        await streamed.get_output()
    streamed_reasoning = ThinkingPart('Think.', id='reasoning_content', provider_name='openai')
    assert streamed.all_messages()[-1].parts == [streamed_reasoning, TextPart('Hello there')]
    # The server's own reasoning goes back in the field it came in.
    assert server.bodies()[1]['messages'][1] == {
        'role': 'assistant',
        'content': 'It is sunny in Paris.',
        'reasoning_content': 'Paris is in France.',
    }


async def test_a_turn_that_only_thought_sends_its_thinking_as_text(server: ProviderServer) -> None:
    history = [
        ModelRequest(parts=[UserPromptPart('q')]),
        ModelResponse(parts=[ThinkingPart('hmm')]),
        ModelRequest(parts=[UserPromptPart('q2')]),
    ]
    server.queue(fixture('openai_text.json'))
    await Agent(openai_model(server)).run(message_history=history)
    body = server.bodies()[0]
    assert_valid_openai(body)
    assert body['messages'][1] == {'role': 'assistant', 'content': '<think>\nhmm\n</think>'}


async def test_a_tool_is_strict_unless_it_opts_out(server: ProviderServer) -> None:
    agent = Agent(openai_model(server))

    @agent.tool_plain
    def weather(city: str) -> str:
        return city

    @agent.tool_plain(strict=False)
    def loose(city: str) -> str:
        return city

    @agent.tool_plain
    def forecast(city: str, days: int = 3) -> str:
        return city

    server.queue(fixture('openai_text.json'))
    await agent.run('Hi')
    tools = {t['function']['name']: t['function'] for t in server.bodies()[-1]['tools']}
    assert tools['weather']['strict'] is True
    assert 'strict' not in tools['loose']
    assert 'strict' not in tools['forecast']  # an optional argument: strict mode would make it required
    assert tools['weather']['parameters']['additionalProperties'] is False
