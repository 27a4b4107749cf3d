"""The request settings a provider's SDK honours (`timeout`, `max_retries`), sent through each
Threadline model to a local server, and what a transport failure says about where it happened."""

from __future__ import annotations

import pickle
import warnings
from typing import Any

import pytest

from tests.models.providers.conftest import anthropic_model, openai_model
from tests.models.providers.server import ProviderServer, fixture
from threadline import Agent
from threadline.exceptions import ModelConnectionError, ModelTimeoutError, UnsupportedSettingWarning
from threadline.messages import ModelResponse, TextPart
from threadline.models import Model


def _google(server: ProviderServer) -> Model:
    from threadline.models.google import GoogleModel, GoogleProvider

    return GoogleModel('gemini-2.5-flash', provider=GoogleProvider(api_key='k', base_url=server.url))


MODELS = {
    'openai': (openai_model, 'openai_text.json'),
    'anthropic': (anthropic_model, 'anthropic_text.json'),
    'google': (_google, 'gemini_text.json'),
}


@pytest.mark.parametrize('provider', MODELS)
async def test_a_timeout_setting_ends_a_slow_answer_with_its_phase(server: ProviderServer, provider: str) -> None:
    make, reply = MODELS[provider]
    server.queue({**fixture(reply), 'delay': 1.0})
    with pytest.raises(ModelTimeoutError) as caught:
        await Agent(make(server)).run('hi', model_settings={'timeout': 0.2})
    assert caught.value.phase == 'read'  # the request was sent: the provider may have acted on it
    assert isinstance(caught.value, ModelConnectionError)
    copy = pickle.loads(pickle.dumps(caught.value))
    assert (type(copy), copy.phase, str(copy)) == (ModelTimeoutError, 'read', str(caught.value))


@pytest.mark.parametrize('provider', ['openai', 'anthropic'])
async def test_max_retries_setting_retries_this_request(server: ProviderServer, provider: str) -> None:
    make, reply = MODELS[provider]
    model = make(server)  # its client retries nothing (max_retries=0)
    server.queue({'status': 500, 'body': {'error': {'message': 'oops', 'type': 'server_error'}}}, fixture(reply))
    before = len(server.requests)
    result = await Agent(model).run('hi', model_settings={'max_retries': 1})
    assert result.output
    assert len(server.requests) - before == 2


async def test_an_unreachable_provider_fails_at_connect() -> None:
    from threadline.models.openai import OpenAIChatModel, OpenAIProvider

    model = OpenAIChatModel(
        'gpt-5.2', provider=OpenAIProvider(base_url='http://127.0.0.1:9/v1', api_key='k', max_retries=0)
    )
    with pytest.raises(ModelConnectionError) as caught:
        await Agent(model).run('hi')
    assert caught.value.phase == 'connect'
    assert not isinstance(caught.value, ModelTimeoutError)


async def test_a_setting_a_model_ignores_warns_each_request_and_local_models_never(server: ProviderServer) -> None:
    from threadline.models.function import FunctionModel
    from threadline.models.openai import OpenAIProvider
    from threadline.models.openai_responses import OpenAIResponsesModel

    model = OpenAIResponsesModel(
        'gpt-5.2', provider=OpenAIProvider(base_url=server.url + '/v1', api_key='k', max_retries=0)
    )
    server.queue(fixture('openai_responses_text.json'), fixture('openai_responses_text.json'))
    agent: Agent[Any, str] = Agent(model, model_settings={'stop_sequences': ['END']})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        await agent.run('hi')
        await agent.run('again')
    texts = [str(w.message) for w in caught if w.category is UnsupportedSettingWarning]
    assert texts == ["The `stop_sequences` setting is not supported by model 'openai:gpt-5.2' and will be ignored."] * 2
    with warnings.catch_warnings():
        warnings.simplefilter('error', UnsupportedSettingWarning)
        result = await Agent(FunctionModel(lambda messages, info: ModelResponse([TextPart('ok')]))).run(
            'hi', model_settings={'stop_sequences': ['END'], 'timeout': 1.0, 'extra_body': {'a': 1}}
        )
    assert result.output == 'ok'


def test_a_price_lookup_that_breaks_warns_and_leaves_the_cost_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip('genai_prices')
    import genai_prices

    from threadline.exceptions import CostCalculationFailedWarning
    from threadline.models._prices import price_of

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError('price table unreadable')

    monkeypatch.setattr(genai_prices, 'calc_price', broken)
    with pytest.warns(CostCalculationFailedWarning, match='Failed to get cost: RuntimeError'):
        assert price_of(('gpt-4o', 'openai', None), input_tokens=10, output_tokens=5) is None
