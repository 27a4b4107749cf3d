"""Fixtures for the provider tests: a local server, SDK-pointed models, and request-body checks
against the SDKs' own request parameter types."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from pydantic import ConfigDict, TypeAdapter

from tests.models.providers.server import ProviderServer
from threadline import Agent
from threadline.models import Model
from threadline.models.anthropic import AnthropicModel, AnthropicProvider
from threadline.models.openai import OpenAIChatModel, OpenAIProvider


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


def openai_model(server: ProviderServer, name: str = 'gpt-5.2', **kwargs: Any) -> OpenAIChatModel:
    provider = OpenAIProvider(base_url=server.url + '/v1', api_key='test-key', max_retries=0)
    return OpenAIChatModel(name, provider=provider, **kwargs)


def anthropic_model(server: ProviderServer, name: str = 'claude-sonnet-4-6', **kwargs: Any) -> AnthropicModel:
    provider = AnthropicProvider(base_url=server.url, api_key='test-key', max_retries=0)
    return AnthropicModel(name, provider=provider, **kwargs)


def _materialize(value: Any) -> Any:
    """Force pydantic's lazy `Iterable` validators so every nested item is checked."""
    if hasattr(value, 'model_dump'):  # the SDK's response models are valid request blocks too
        return _materialize(value.model_dump(exclude_unset=True))
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == 'ValidatorIterator':
        return [_materialize(v) for v in value]
    return value


@cache  # kept alive: the lazy iterators it returns refer to its definitions
def _validator(params_type: Any) -> TypeAdapter[Any]:
    # Wrapping in a list lets the config apply: unknown keys anywhere in the body are errors.
    return TypeAdapter(list[params_type], config=ConfigDict(extra='forbid'))


def assert_valid_openai(body: dict[str, Any]) -> None:
    """The body validates against the openai SDK's `CompletionCreateParams` with nothing dropped."""
    from openai.types.chat import completion_create_params as params

    kind = params.CompletionCreateParamsStreaming if body.get('stream') else params.CompletionCreateParamsNonStreaming
    assert _materialize(_validator(kind).validate_python([body]))[0] == body


def assert_valid_anthropic(body: dict[str, Any]) -> None:
    """The body validates against the anthropic SDK's `MessageCreateParams` with nothing dropped."""
    from anthropic.types import message_create_params as params

    kind = params.MessageCreateParamsStreaming if body.get('stream') else params.MessageCreateParamsNonStreaming
    assert _materialize(_validator(kind).validate_python([body]))[0] == body


def weather_agent(model: Model) -> Agent[None, str]:
    """The agent most provider tests run: a standing system prompt, instructions and one tool."""
    agent = Agent(model, system_prompt='You are a weather bot.', instructions='Be brief.')

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return f'sunny in {city}'

    return agent
