"""pydantic-ai's own OpenAI and Anthropic models, through the official SDKs to the local recording
server, with Threadline's StepPersistence: what is stored is what pydantic-ai's run holds, byte for
byte on the wire; streaming, history processors and `enqueue` too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai import ModelMessagesTypeAdapter as TheirTA
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from tests.models.providers.server import ProviderServer, fixture
from threadline.pydantic_ai import StepPersistence, from_pydantic_ai
from threadline.storage import SQLiteStore


@pytest.fixture
def server() -> Any:
    with ProviderServer() as running:
        yield running


def weather(model: Any, store: SQLiteStore, *extra: Any) -> Agent[None, str]:
    capabilities = [StepPersistence(store, scope='acme'), *extra]
    agent = Agent(model, capabilities=capabilities, system_prompt='You are a weather bot.')

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return f'sunny in {city}'

    return agent


def stored_is_the_run(store: SQLiteStore, result: Any) -> None:
    # Compared on the wire: a provider's `provider_details` can hold a datetime, which JSON (any
    # store, and pydantic-ai's own round trip) keeps as its ISO text.
    raw = store.sync.raw_history(result.conversation_id, scope='acme')
    assert json.loads(raw) == json.loads(TheirTA.dump_json(result.all_messages()))
    [effect] = store.sync.tool_effects(result.run_id, scope='acme')
    assert effect.status == 'completed' and effect.tool_name == 'get_weather'


def openai(server: ProviderServer) -> OpenAIChatModel:
    return OpenAIChatModel('gpt-5.2', provider=OpenAIProvider(base_url=server.url + '/v1', api_key='test-key'))


async def test_openai_through_the_sdk(server: ProviderServer, tmp_path: Path) -> None:
    server.queue(fixture('openai_tool_call.json'), fixture('openai_text.json'))
    store = SQLiteStore(tmp_path / 'openai.db')
    result = await weather(openai(server), store).run('Weather in Paris?')
    assert result.output == 'It is sunny in Paris.'
    stored_is_the_run(store, result)


async def test_openai_streamed(server: ProviderServer, tmp_path: Path) -> None:
    server.queue(fixture('openai_stream_tool_call.json'), fixture('openai_stream.json'))
    store = SQLiteStore(tmp_path / 'stream.db')
    async with weather(openai(server), store).run_stream('Weather in Paris?') as streamed:
        output = await streamed.get_output()
    assert output
    stored_is_the_run(store, streamed)


async def test_anthropic_through_the_sdk(server: ProviderServer, tmp_path: Path) -> None:
    server.queue(fixture('anthropic_stream_tool_use.json'), fixture('anthropic_stream.json'))
    store = SQLiteStore(tmp_path / 'anthropic.db')
    model = AnthropicModel('claude-sonnet-4-6', provider=AnthropicProvider(base_url=server.url, api_key='test-key'))
    result = await weather(model, store).run('Weather in Paris?')
    assert result.output
    stored_is_the_run(store, result)


async def test_a_history_processor_and_enqueue_are_stored_as_the_run_holds_them(
    server: ProviderServer, tmp_path: Path
) -> None:
    def last_two_turns(messages: list[ModelMessage]) -> list[ModelMessage]:
        return messages[-4:]

    server.queue(fixture('openai_tool_call.json'), fixture('openai_text.json'))
    store = SQLiteStore(tmp_path / 'processed.db')
    agent = weather(openai(server), store, ProcessHistory(last_two_turns))

    @agent.tool
    def note(ctx: RunContext[None]) -> str:
        return 'noted'

    old = [ModelRequest(parts=[UserPromptPart(f'old question {k}')]) for k in range(3)]
    store.sync.append('processed', from_pydantic_ai(old), scope='acme')
    result = await agent.run('Weather in Paris?', message_history=old, conversation_id='processed')
    raw = store.sync.raw_history('processed', scope='acme')
    assert json.loads(raw) == json.loads(TheirTA.dump_json(result.all_messages()))
