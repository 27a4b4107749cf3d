"""The unified `thinking` setting is sent as pydantic-ai 2.62 sends it: OpenAI's `reasoning_effort`
(Chat Completions) and `reasoning` (Responses), Gemini's `thinking_config`, over model families
that reason in each way, every value, with and without sampling settings (which OpenAI refuses
while a model reasons, so both libraries drop them with a warning).

Each case makes one request through the official SDK to a local server on both sides and
compares the whole body (folded as `test_request_bodies` folds it) and the warnings raised. For
Gemini's image models the reference also asks for image output, which Threadline has none of:
`responseModalities` is left out of those bodies.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from tests.compat.test_request_bodies import FOLD
from tests.models.providers.server import ProviderServer, fixture
from threadline.exceptions import UserError
from threadline.messages import ModelRequest, UserPromptPart
from threadline.models import ModelRequestParameters

pytest.importorskip('pydantic_ai')

VALUES: list[object] = [None, True, False, 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']
MODELS = {
    'openai': [
        'gpt-4o',
        'o3-mini',
        'o4-mini',
        'gpt-5',
        'gpt-5-pro',
        'gpt-5-chat-latest',
        'gpt-5.1',
        'gpt-5.1-chat-latest',
        'gpt-5.2',
        'gpt-5.2-pro',
        'gpt-5.4',
        'gpt-5.5',
        'gpt-5.5-pro',
        'gpt-5.6-sol',
        'gpt-6-astra',
    ],
    'google': [
        'gemini-2.0-flash',
        'gemini-2.5-flash',
        'gemini-2.5-pro',
        'gemini-2.5-flash-image',
        'gemini-3-pro-preview',
        'gemini-3-flash-preview',
        'gemini-3.1-pro-preview',
        'gemini-3.1-flash-image-preview',
        'gemma-3-27b-it',
    ],
}
MODELS['openai-responses'] = MODELS['openai']
FIXTURES = {
    'openai': 'openai_text.json',
    'openai-responses': 'openai_responses_text.json',
    'google': 'gemini_text.json',
}


@pytest.fixture(scope='module')
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


def _settings(thinking: object, sampling: bool) -> dict[str, Any]:
    settings: dict[str, Any] = {} if thinking is None else {'thinking': thinking}
    return {**settings, 'temperature': 0.5, 'top_p': 0.9} if sampling else settings


async def _ours(server: ProviderServer, provider: str, name: str, settings: dict[str, Any]) -> Any:
    if provider == 'google':
        from threadline.models.google import GoogleModel, GoogleProvider

        model: Any = GoogleModel(name, provider=GoogleProvider(api_key='k', base_url=server.url))
    else:
        from threadline.models.openai import OpenAIChatModel, OpenAIProvider, OpenAIResponsesModel

        cls = OpenAIChatModel if provider == 'openai' else OpenAIResponsesModel
        model = cls(name, provider=OpenAIProvider(base_url=server.url + '/v1', api_key='k', max_retries=0))
    server.queue(fixture(FIXTURES[provider]))
    await model.request([ModelRequest(parts=[UserPromptPart('hi')])], settings, ModelRequestParameters())
    return server.bodies()[-1]


async def _reference(server: ProviderServer, provider: str, name: str, settings: dict[str, Any]) -> Any:
    from pydantic_ai.messages import ModelRequest as RefRequest
    from pydantic_ai.messages import UserPromptPart as RefUser
    from pydantic_ai.models import ModelRequestParameters as RefParameters

    if provider == 'google':
        from pydantic_ai.models.google import GoogleModel
        from pydantic_ai.providers.google import GoogleProvider

        model: Any = GoogleModel(name, provider=GoogleProvider(api_key='k', base_url=server.url))
    else:
        from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        cls = OpenAIChatModel if provider == 'openai' else OpenAIResponsesModel
        model = cls(name, provider=OpenAIProvider(base_url=server.url + '/v1', api_key='k'))
    server.queue(fixture(FIXTURES[provider]))
    await model.request([RefRequest(parts=[RefUser('hi')])], dict(settings), RefParameters())
    return server.bodies()[-1]


async def _outcome(make: Any, server: ProviderServer, provider: str, name: str, settings: dict[str, Any]) -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        body = FOLD[provider](await make(server, provider, name, settings))
    if 'image' in name:
        body['generationConfig'].pop('responseModalities')
    said = sorted(str(w.message) for w in caught if 'Sampling parameters' in str(w.message))
    return body, said


@pytest.mark.parametrize('provider', ['openai', 'openai-responses', 'google'])
async def test_thinking_is_sent_as_the_reference_sends_it(server: ProviderServer, provider: str) -> None:
    differing = []
    for name in MODELS[provider]:
        for thinking in VALUES:
            for sampling in (False, True) if provider != 'google' else (False,):
                settings = _settings(thinking, sampling)
                ours = await _outcome(_ours, server, provider, name, settings)
                reference = await _outcome(_reference, server, provider, name, settings)
                if ours != reference:
                    differing.append((name, thinking, sampling, ours, reference))
    assert not differing, differing[:3]


@pytest.mark.parametrize(
    ('provider', 'given'),
    [
        ('openai', {'openai_reasoning_effort': 'low'}),
        ('openai', {'openai_reasoning_effort': 'none'}),
        ('openai-responses', {'openai_reasoning_effort': 'high'}),
        ('openai-responses', {'openai_reasoning_effort': 'none'}),
        ('google', {'google_thinking_config': {'thinking_budget': 1024, 'include_thoughts': True}}),
    ],
)
async def test_a_provider_setting_wins_over_thinking(
    server: ProviderServer, provider: str, given: dict[str, Any]
) -> None:
    models = ['gpt-5.1', 'gpt-5', 'o3-mini'] if provider != 'google' else ['gemini-2.5-flash', 'gemini-3-pro-preview']
    for name in models:
        for thinking in (None, 'max', False):
            for sampling in (False, True):
                settings = {**_settings(thinking, sampling), **given}
                ours = await _outcome(_ours, server, provider, name, settings)
                assert ours == await _outcome(_reference, server, provider, name, settings), (name, settings)


async def test_a_thinking_value_no_model_takes_is_a_clear_error(server: ProviderServer) -> None:
    with pytest.raises(UserError, match=r"setting `thinking` takes True, False or one of 'minimal'.*not str 'hgih'"):
        await _ours(server, 'openai', 'gpt-5', {'thinking': 'hgih'})


@pytest.mark.parametrize('profile', [None, {'supports_thinking': True}])
async def test_a_function_model_is_told_the_thinking_in_effect(profile: dict[str, Any] | None) -> None:
    from pydantic_ai import Agent as RefAgent
    from pydantic_ai.messages import ModelResponse as RefResponse
    from pydantic_ai.messages import TextPart as RefText
    from pydantic_ai.models.function import FunctionModel as RefFunctionModel

    from threadline import Agent
    from threadline.messages import ModelResponse, TextPart
    from threadline.models.function import FunctionModel

    told: dict[str, Any] = {}

    def ours(messages: Any, info: Any) -> ModelResponse:
        told['ours'] = (info.model_request_parameters.thinking, 'thinking' in (info.model_settings or {}))
        return ModelResponse(parts=[TextPart('ok')])

    def theirs(messages: Any, info: Any) -> RefResponse:
        told['theirs'] = (info.model_request_parameters.thinking, 'thinking' in (info.model_settings or {}))
        return RefResponse(parts=[RefText('ok')])

    await Agent(FunctionModel(ours, profile=profile)).run('hi', model_settings={'thinking': 'high'})
    await RefAgent(RefFunctionModel(theirs, profile=profile)).run('hi', model_settings={'thinking': 'high'})
    assert told['ours'] == told['theirs'] == (('high' if profile else None), False)
