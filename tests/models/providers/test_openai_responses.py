"""OpenAIResponsesModel through the official openai SDK against the local recording server,
including a conversation OpenAI holds (`previous_response_id`) continued after a store round trip."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tests.models.providers.conftest import _materialize, _validator
from tests.models.providers.server import ProviderServer, fixture
from threadline import Agent
from threadline.messages import ModelRequest, ModelResponse, TextPart, ThinkingPart, ToolCallPart, UserPromptPart
from threadline.models.openai import OpenAIProvider
from threadline.models.openai_responses import OpenAIResponsesModel
from threadline.storage import SQLiteStore

AUTO: Any = {'openai_previous_response_id': 'auto'}


def responses_model(server: ProviderServer, name: str = 'gpt-5.2') -> OpenAIResponsesModel:
    provider = OpenAIProvider(base_url=server.url + '/v1', api_key='test-key', max_retries=0)
    return OpenAIResponsesModel(name, provider=provider)


def assert_valid_responses(body: dict[str, Any]) -> None:
    """The body validates against the openai SDK's `ResponseCreateParams` with nothing dropped."""
    from openai.types.responses import response_create_params as params

    kind = params.ResponseCreateParamsStreaming if body.get('stream') else params.ResponseCreateParamsNonStreaming
    assert _materialize(_validator(kind).validate_python([body]))[0] == body


def weather(model: OpenAIResponsesModel) -> Agent[None, str]:
    agent = Agent(model, system_prompt='You are a weather bot.', instructions='Be brief.')

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return f'sunny in {city}'

    return agent


async def test_a_tool_run_round_trips_through_the_sdk(server: ProviderServer) -> None:
    server.queue(fixture('openai_responses_tool_call.json'), fixture('openai_responses_text.json'))
    result = await weather(responses_model(server)).run('Weather in Paris?')

    assert result.output == 'It is sunny in Paris.'
    first, second = server.bodies()
    for body in (first, second):
        assert_valid_responses(body)
    assert server.requests[0]['path'] == '/v1/responses'
    assert first['instructions'] == 'Be brief.'
    assert first['input'] == [
        {'role': 'system', 'content': 'You are a weather bot.'},
        {'role': 'user', 'content': 'Weather in Paris?'},
    ]
    assert first['include'] == ['reasoning.encrypted_content']
    [tool] = first['tools']
    assert tool['name'] == 'get_weather' and tool['strict'] is True
    # Reasoning goes back as its item, with its id and encrypted content; the call with its item id.
    assert second['input'][2:] == [
        {
            'type': 'reasoning',
            'id': 'rs_1',
            'summary': [{'type': 'summary_text', 'text': 'The user wants the weather.'}],
            'encrypted_content': 'gAAAAB-encrypted-1',
        },
        {
            'type': 'function_call',
            'call_id': 'call_abc123',
            'name': 'get_weather',
            'arguments': '{"city":"Paris"}',
            'id': 'fc_1',
        },
        {'type': 'function_call_output', 'call_id': 'call_abc123', 'output': 'sunny in Paris'},
    ]
    response = result.all_messages()[1]
    assert isinstance(response, ModelResponse)
    assert response.parts == [
        ThinkingPart('The user wants the weather.', id='rs_1', signature='gAAAAB-encrypted-1', provider_name='openai'),
        ToolCallPart('get_weather', '{"city":"Paris"}', 'call_abc123', id='fc_1', provider_name='openai'),
    ]
    assert (response.usage.output_reasoning_tokens, response.finish_reason) == (12, 'tool_call')
    assert response.provider_response_id == 'resp_tool_1'


async def test_a_held_conversation_sends_only_what_is_new_and_survives_a_store(
    server: ProviderServer, tmp_path: Path
) -> None:
    agent = weather(responses_model(server))
    server.queue(fixture('openai_responses_tool_call.json'), fixture('openai_responses_text.json'))
    first = await agent.run('Weather in Paris?', model_settings=AUTO)
    # Within the run, the second request continues the first response: only the tool output goes.
    assert 'previous_response_id' not in server.bodies()[0]
    assert server.bodies()[1]['previous_response_id'] == 'resp_tool_1'
    assert server.bodies()[1]['input'] == [
        {'type': 'function_call_output', 'call_id': 'call_abc123', 'output': 'sunny in Paris'}
    ]

    store = SQLiteStore(tmp_path / 'held.db')
    await store.save(first, scope='me')
    stored = await store.load(first.conversation_id, scope='me')
    assert len(stored.messages) == 4  # the stored history stays complete

    server.queue(fixture('openai_responses_text.json'))
    second = await agent.run('And tomorrow?', message_history=stored.messages, model_settings=AUTO)
    body = server.bodies()[2]
    assert body['previous_response_id'] == 'resp_text_1'
    assert body['input'] == [{'role': 'user', 'content': 'And tomorrow?'}]
    assert len(second.all_messages()) == 6
    store.close()


async def test_an_edited_history_or_another_model_sends_everything(
    server: ProviderServer, caplog: pytest.LogCaptureFixture
) -> None:
    agent = weather(responses_model(server))
    server.queue(fixture('openai_responses_text.json'))
    first = await agent.run('Weather in Paris?', model_settings=AUTO)

    edited = first.all_messages()
    edited[0] = ModelRequest(parts=[UserPromptPart('Weather in Oslo? secret-detail')])
    server.queue(fixture('openai_responses_text.json'))
    with caplog.at_level(logging.INFO, logger='threadline.models'):
        await agent.run('Thanks', message_history=edited, model_settings=AUTO)
    body = server.bodies()[-1]
    assert 'previous_response_id' not in body
    assert [item.get('content') for item in body['input']][-3:] == [
        'Weather in Oslo? secret-detail',
        'It is sunny in Paris.',
        'Thanks',
    ]
    assert 'resp_text_1' in caplog.text and 'sending the whole history' in caplog.text
    assert 'secret-detail' not in caplog.text and 'Oslo' not in caplog.text  # no content in logs

    server.queue(fixture('openai_responses_text.json'))
    other = Agent(responses_model(server, 'gpt-5.4'))
    await other.run('Thanks', message_history=first.all_messages(), model_settings=AUTO)
    assert 'previous_response_id' not in server.bodies()[-1]


async def test_an_explicit_id_or_an_openai_conversation(server: ProviderServer) -> None:
    agent = Agent(responses_model(server))
    server.queue(fixture('openai_responses_text.json'), fixture('openai_responses_text.json'))
    result = await agent.run('Go on', model_settings={'openai_previous_response_id': 'resp_seed'})  # type: ignore[typeddict-unknown-key]
    assert server.bodies()[0]['previous_response_id'] == 'resp_seed'
    await agent.run(
        'More',
        message_history=result.all_messages(),
        model_settings={'openai_conversation_id': 'conv_1'},  # type: ignore[typeddict-unknown-key]
    )
    body = server.bodies()[1]
    assert body['conversation'] == 'conv_1' and 'previous_response_id' not in body
    assert body['input'] == [{'role': 'user', 'content': 'More'}]


async def test_streaming_text_with_usage(server: ProviderServer) -> None:
    server.queue(fixture('openai_responses_stream.json'))
    async with Agent(responses_model(server)).run_stream('hi', model_settings=AUTO) as stream:
        deltas = [d async for d in stream.stream_text(delta=True)]
    assert ''.join(deltas) == 'Hello there'
    body = server.bodies()[0]
    assert body['stream'] is True
    assert_valid_responses(body)
    response = stream.all_messages()[-1]
    assert isinstance(response, ModelResponse) and response.parts == [TextPart('Hello there')]
    assert (response.usage.input_tokens, response.usage.output_tokens) == (15, 2)
    assert response.provider_response_id == 'resp_stream_1' and response.history_digest is not None


def test_the_model_string() -> None:
    from threadline.models import infer_model

    model = infer_model('openai-responses:gpt-5.2')
    assert isinstance(model, OpenAIResponsesModel) and model.model_name == 'gpt-5.2'


async def test_built_in_tool_items_are_kept_opaque_and_sent_back(server: ProviderServer) -> None:
    reply = fixture('openai_responses_text.json')
    search = {
        'type': 'web_search_call',
        'id': 'ws_1',
        'status': 'completed',
        'action': {'type': 'search', 'query': 'x'},
    }
    reply['body']['output'].insert(0, search)
    server.queue(reply, fixture('openai_responses_text.json'))
    agent = Agent(responses_model(server))
    first = await agent.run('Search the web')
    response = first.all_messages()[1]
    assert isinstance(response, ModelResponse)
    assert [type(p).__name__ for p in response.parts] == ['NativeToolCallPart', 'NativeToolReturnPart', 'TextPart']
    await agent.run('More', message_history=first.all_messages())
    assert search in server.bodies()[1]['input']  # back to OpenAI as it came


async def test_streaming_a_function_call(server: ProviderServer) -> None:
    import json

    tool_call = fixture('openai_responses_tool_call.json')['body']
    created = {**tool_call, 'status': 'in_progress', 'output': []}
    call = {'type': 'function_call', 'id': 'fc_1', 'call_id': 'call_abc123', 'name': 'get_weather', 'arguments': ''}
    events = [
        {'type': 'response.created', 'sequence_number': 0, 'response': created},
        {'type': 'response.output_item.added', 'sequence_number': 1, 'output_index': 0, 'item': call},
        *(
            {
                'type': 'response.function_call_arguments.delta',
                'sequence_number': 2 + k,
                'item_id': 'fc_1',
                'output_index': 0,
                'delta': piece,
            }
            for k, piece in enumerate(['{"city":', '"Paris"}'])
        ),
        {'type': 'response.completed', 'sequence_number': 4, 'response': tool_call},
    ]
    stream = {'sse': [f'event: {e["type"]}\ndata: {json.dumps(e)}' for e in events]}
    server.queue(stream, fixture('openai_responses_stream.json'))
    agent = weather(responses_model(server))
    async with agent.run_stream('Weather in Paris?') as streamed:
        assert await streamed.get_output() == 'Hello there'
    call_part = streamed.all_messages()[1].parts[0]  # type: ignore[union-attr]
    assert isinstance(call_part, ToolCallPart)
    assert (call_part.tool_call_id, call_part.id, call_part.args) == ('call_abc123', 'fc_1', '{"city":"Paris"}')
    assert server.bodies()[1]['input'][-1] == {
        'type': 'function_call_output',
        'call_id': 'call_abc123',
        'output': 'sunny in Paris',
    }
