"""GoogleModel through the official google-genai SDK against the local recording server."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.models.providers.conftest import openai_model
from tests.models.providers.server import ProviderServer, fixture
from threadline import Agent
from threadline.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UserPromptPart,
)
from threadline.models import ModelHTTPError, ModelRequestParameters
from threadline.models.google import GoogleModel, GoogleProvider

SIGNATURE = base64.b64encode(b'gemini-signature-1').decode()


def gemini(server: ProviderServer, name: str = 'gemini-2.5-flash') -> GoogleModel:
    return GoogleModel(name, provider=GoogleProvider(api_key='test-key', base_url=server.url))


def assert_valid_gemini(body: dict[str, Any]) -> None:
    """`contents` and `config` validate against the SDK's own types, with nothing dropped."""
    from google.genai import types

    for content in body['contents']:
        assert types.Content.model_validate(content).model_dump(exclude_none=True) == content
    config = types.GenerateContentConfig.model_validate(body['config'])
    assert config.model_dump(exclude_none=True, mode='python') == _without_none(body['config'])


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


async def test_a_tool_run_round_trips_through_the_sdk(server: ProviderServer) -> None:
    agent = Agent(gemini(server), system_prompt='You are a weather bot.', instructions='Be brief.')

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return f'sunny in {city}'

    server.queue(fixture('gemini_tool_call.json'), fixture('gemini_text.json'))
    result = await agent.run('Weather in Paris?')

    assert result.output == 'It is sunny in Paris.'
    first, second = (r['body'] for r in server.requests)
    assert server.requests[0]['path'].endswith('/models/gemini-2.5-flash:generateContent')
    assert server.requests[0]['headers']['x-goog-api-key'] == 'test-key'
    assert first['systemInstruction'] == {
        'role': 'user',
        'parts': [{'text': 'You are a weather bot.'}, {'text': 'Be brief.'}],
    }
    assert first['contents'] == [{'role': 'user', 'parts': [{'text': 'Weather in Paris?'}]}]
    # VALIDATED: AUTO with the API holding calls to their schemas, as pydantic-ai 2.62 asks of a
    # thinking Gemini model whose tools are not strict=False.
    assert first['toolConfig'] == {'functionCallingConfig': {'mode': 'VALIDATED'}}
    [declaration] = first['tools'][0]['functionDeclarations']
    assert declaration['name'] == 'get_weather' and declaration['description'] == 'The current weather in a city.'
    # The call goes back with its id and the signature Gemini gave it; the result by the same id.
    assert second['contents'][1:] == [
        {
            'role': 'model',
            'parts': [
                {'text': 'The user wants the weather.', 'thought': True},
                {
                    'functionCall': {'name': 'get_weather', 'args': {'city': 'Paris'}, 'id': 'fc-1'},
                    'thoughtSignature': SIGNATURE,
                },
            ],
        },
        {
            'role': 'user',
            'parts': [
                {
                    'functionResponse': {
                        'name': 'get_weather',
                        'id': 'fc-1',
                        'response': {'return_value': 'sunny in Paris'},
                    }
                }
            ],
        },
    ]
    call = result.all_messages()[1]
    assert isinstance(call, ModelResponse) and call.provider_name == 'google'
    assert call.parts[1] == ToolCallPart(
        'get_weather',
        {'city': 'Paris'},
        'fc-1',
        provider_name='google',
        provider_details={'thought_signature': SIGNATURE},
    )
    final = result.all_messages()[-1]
    assert isinstance(final, ModelResponse)
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.output_reasoning_tokens) == (42, 19, 12)
    assert (final.model_name, final.provider_response_id, final.finish_reason) == (
        'gemini-2.5-flash',
        'gemini-text-1',
        'stop',
    )


def test_request_bodies_validate_against_the_sdk_types() -> None:
    history = ModelMessagesTypeAdapter.validate_json(
        ModelMessagesTypeAdapter.dump_json(
            [
                ModelRequest(parts=[UserPromptPart(['look', _png()])]),
                ModelResponse(
                    parts=[ThinkingPart('hmm', signature=SIGNATURE, provider_name='google'), TextPart('a cat')],
                    provider_name='google',
                ),
                ModelRequest(parts=[UserPromptPart('thanks')]),
            ]
        )
    )
    body = GoogleModel('gemini-2.5-flash', provider=None).request_body(history, {'temperature': 0.2}, _params())
    assert_valid_gemini(body)
    # A Gemini ThinkingPart's signature rides on the part after it.
    assert body['contents'][1]['parts'] == [
        {'text': 'hmm', 'thought': True},
        {'text': 'a cat', 'thought_signature': b'gemini-signature-1'},
    ]


def _png() -> Any:
    from threadline.messages import BinaryContent

    return BinaryContent(b'\x89PNG\r\n\x1a\n', media_type='image/png')


def _params() -> ModelRequestParameters:
    from threadline.models import ToolDefinition

    return ModelRequestParameters(function_tools=[ToolDefinition('get_weather', description='Weather.')])


async def test_signatures_go_back_only_to_gemini(server: ProviderServer) -> None:
    history = [
        ModelRequest(parts=[UserPromptPart('Weather?')]),
        ModelResponse(
            parts=[
                ToolCallPart('get_weather', {'city': 'Oslo'}, 'c1', provider_details={'thought_signature': SIGNATURE})
            ],
            provider_name='openai',  # not Gemini's: its signature means nothing to Gemini
        ),
    ]
    agent = Agent(gemini(server))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return 'cold'

    server.queue(fixture('gemini_text.json'))
    await agent.run(message_history=history)
    call = server.bodies()[0]['contents'][1]['parts'][0]
    # The first call of a turn must carry a signature: Gemini's documented placeholder stands in.
    assert call['thoughtSignature'] == base64.b64encode(b'skip_thought_signature_validator').decode()

    server.queue(fixture('gemini_tool_call.json'), fixture('gemini_text.json'), fixture('openai_text.json'))
    result = await agent.run('And Paris?')
    await Agent(openai_model(server)).run('Thanks', message_history=result.all_messages())
    assert 'thoughtSignature' not in str(server.bodies()[-1])


async def test_streaming_text_with_usage(server: ProviderServer) -> None:
    server.queue(fixture('gemini_stream.json'))
    async with Agent(gemini(server)).run_stream('hi') as stream:
        deltas = [d async for d in stream.stream_text(delta=True)]
    assert ''.join(deltas) == 'Hello there'
    assert server.requests[0]['path'].endswith(':streamGenerateContent?alt=sse')
    response = stream.all_messages()[-1]
    assert isinstance(response, ModelResponse) and response.parts == [TextPart('Hello there')]
    assert (response.usage.input_tokens, response.usage.output_tokens, response.finish_reason) == (15, 2, 'stop')


async def test_api_errors_become_model_http_error(server: ProviderServer) -> None:
    error = {'error': {'code': 429, 'message': 'Resource has been exhausted', 'status': 'RESOURCE_EXHAUSTED'}}
    server.queue({'status': 429, 'body': error})
    with pytest.raises(ModelHTTPError) as caught:
        await Agent(gemini(server)).run('hi')
    assert caught.value.status_code == 429 and caught.value.model_name == 'gemini-2.5-flash'


def test_a_missing_key_names_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from threadline.exceptions import UserError

    monkeypatch.delenv('GOOGLE_API_KEY', raising=False)
    monkeypatch.delenv('GEMINI_API_KEY', raising=False)
    with pytest.raises(UserError, match='GOOGLE_API_KEY'):
        Agent('google:gemini-2.5-flash').run_sync('hi')


def test_seed_001_reusing_messages_with_a_different_model(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 001's "Reusing messages with a different model", with `pydantic_ai` read as
    `threadline`; both providers are the local server."""
    monkeypatch.setenv('OPENAI_BASE_URL', server.url + '/v1')
    monkeypatch.setenv('OPENAI_API_KEY', 'test-key')
    monkeypatch.setenv('GOOGLE_API_KEY', 'test-key')
    monkeypatch.setenv('GOOGLE_GEMINI_BASE_URL', server.url)
    server.queue(fixture('openai_text.json'), fixture('gemini_text.json'))

    agent = Agent('openai:gpt-5.2', instructions='Be a helpful assistant.')
    result1 = agent.run_sync('Tell me a joke.')
    result2 = agent.run_sync('Explain?', model='google:gemini-3-pro-preview', message_history=result1.new_messages())

    assert result2.output == 'It is sunny in Paris.'
    gemini_body = server.requests[1]['body']
    assert server.requests[1]['path'].endswith('/models/gemini-3-pro-preview:generateContent')
    assert gemini_body['systemInstruction'] == {'role': 'user', 'parts': [{'text': 'Be a helpful assistant.'}]}
    assert gemini_body['contents'] == [
        {'role': 'user', 'parts': [{'text': 'Tell me a joke.'}]},
        {'role': 'model', 'parts': [{'text': 'It is sunny in Paris.'}]},
        {'role': 'user', 'parts': [{'text': 'Explain?'}]},
    ]
    models = [m.model_name for m in result2.all_messages() if isinstance(m, ModelResponse)]
    assert models == ['gpt-5.2-2026-01-01', 'gemini-2.5-flash']
