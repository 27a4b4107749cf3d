"""The Gemini request JSON Threadline builds itself equals, field for field, what google-genai's
own conversion makes of the same request, over random histories, tools and settings; and the
one private SDK name it relies on is still there.

The comparison is exact, spelling included: the SDK sends a mix (`inlineData` holding
`mime_type`), and so does Threadline, so the bodies pydantic-ai and Threadline post are equal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples
from threadline.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.models import ModelRequestParameters, OutputObjectDefinition, ToolDefinition, render_history
from threadline.models._google_wire import wire_request
from threadline.models.google import GoogleModel, GoogleProvider

pytest.importorskip('google.genai')

text = st.text(max_size=12)
user_items = st.lists(
    text
    | st.builds(lambda d: BinaryContent(d, media_type='image/png'), st.binary(max_size=12) | st.just(b'\xfb\xff\xbf'))
    | st.just(ImageUrl('https://example.com/cat.png')),
    min_size=1,
    max_size=3,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-9, 9) | text, lambda inner: st.lists(inner, max_size=2), max_leaves=4
)
args = st.dictionaries(st.sampled_from(['city', 'days', 'snake_case_key']), json_values, max_size=3)
signature = st.sampled_from([None, 'c2lnbmF0dXJl'])


@st.composite
def histories(draw: st.DrawFn) -> list[ModelMessage]:
    messages: list[ModelMessage] = [
        ModelRequest([SystemPromptPart('standing'), UserPromptPart(draw(text | user_items))])
    ]
    for turn in range(draw(st.integers(0, 4))):
        calls = [ToolCallPart('get_weather', draw(args), f'c{turn}_{j}') for j in range(draw(st.integers(0, 2)))]
        thinking = [ThinkingPart(draw(text), signature=draw(signature), provider_name='google')]
        messages.append(
            ModelResponse([*thinking[: draw(st.integers(0, 1))], TextPart(draw(text)), *calls], provider_name='google')
        )
        returns = [
            ToolReturnPart(
                'get_weather', draw(json_values), c.tool_call_id, outcome=draw(st.sampled_from(['success', 'failed']))
            )
            for c in calls
        ]
        messages.append(ModelRequest([*returns, UserPromptPart(draw(text))]))
    return messages


schema = {
    'type': 'object',
    'properties': {'city': {'type': 'string', 'title': 'City'}, 'max_days': {'type': 'integer'}},
    'required': ['city'],
}
tool_sets = st.sampled_from(
    [[], [ToolDefinition('get_weather', description='Weather.', parameters_json_schema=schema)]]
)
model_settings = st.fixed_dictionaries(
    {},
    optional={
        'temperature': st.floats(0, 1),
        'top_p': st.floats(0, 1),
        'max_tokens': st.integers(1, 99),
        'stop_sequences': st.lists(text, max_size=2),
        'seed': st.integers(0, 9),
    },
)


def sdk_wire(model: GoogleModel, body: dict[str, Any]) -> dict[str, Any]:
    """What google-genai's `generate_content` would post for `body` (its own conversion)."""
    from google.genai import _common, types
    from google.genai import models as sdk_models

    parameters = types._GenerateContentParameters(**body)
    api_client = model.provider.client._api_client
    converted = sdk_models._GenerateContentParameters_to_mldev(api_client, parameters, None, parameters)
    converted.pop('_url', None)
    converted.pop('config', None)
    return _common.encode_unserializable_types(_common.convert_to_dict(converted))


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), tool_sets, model_settings, st.booleans(), st.sampled_from([None, 'Be brief.']))
def test_the_request_json_equals_the_sdks_conversion(
    history: list[ModelMessage],
    tools: list[ToolDefinition],
    chosen: dict[str, Any],
    native: bool,
    instructions: str | None,
) -> None:
    model = GoogleModel('gemini-2.5-flash', provider=GoogleProvider(api_key='k'))
    output = OutputObjectDefinition(json_schema=schema, name='Forecast') if native and not tools else None
    params = ModelRequestParameters(
        function_tools=tools,
        instructions=instructions,
        output_mode='native' if output else 'text',
        output_object=output,
        allow_text_output=True,
    )
    rendered, _ = render_history(history, model.profile)
    body = model.request_body(rendered, chosen, params)  # type: ignore[arg-type]
    path, wire = wire_request(body)
    assert path == 'models/gemini-2.5-flash:generateContent'
    assert wire == sdk_wire(model, body)


FIXTURES = Path(__file__).parent / 'fixtures'


@pytest.mark.parametrize('name', ['gemini_text.json', 'gemini_tool_call.json'])
def test_an_answer_parses_as_the_sdk_parses_it(name: str) -> None:
    from google.genai import models as sdk_models
    from google.genai import types

    from threadline.models.google import _response

    recorded = json.loads((FIXTURES / name).read_text())
    body = recorded.get('body', recorded)
    ours = types.GenerateContentResponse.model_validate_json(json.dumps(body))
    theirs = types.GenerateContentResponse._from_response(
        response=sdk_models._GenerateContentResponse_from_mldev(body, None, None), kwargs={}
    )
    first, second = _response(ours, 'gemini-2.5-flash'), _response(theirs, 'gemini-2.5-flash')
    second.timestamp = first.timestamp
    assert first == second


def test_the_sdk_still_has_the_client_requests_are_posted_through() -> None:
    """`_google_wire.post` sends through `client.aio._api_client.async_request`, a private name:
    this fails first, and says so, when a google-genai release renames it."""
    client = GoogleProvider(api_key='k').client
    assert callable(getattr(client.aio._api_client, 'async_request', None)), (
        'google-genai no longer has client.aio._api_client.async_request: update threadline/models/_google_wire.py'
    )
