"""Loading beyond the happy path: bad input, legacy fields, newer kinds, multimodal tool returns."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples
from threadline import MessageValidationError, ModelMessagesTypeAdapter
from threadline.messages import (
    BinaryContent,
    ImageUrl,
    ModelResponse,
    OpaqueContent,
    OpaquePart,
    RequestUsage,
    ToolAvailabilityDeltaPart,
    ToolReturnPart,
    UploadedFile,
)

TS = '2025-01-01T00:00:01Z'


def request(*parts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {'parts': list(parts), 'timestamp': TS, 'kind': 'request', **fields}


def response(*parts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {'parts': list(parts), 'timestamp': TS, 'kind': 'response', **fields}


def user(text: str) -> dict[str, Any]:
    return {'content': text, 'timestamp': TS, 'part_kind': 'user-prompt'}


def load(history: Any) -> Any:
    return ModelMessagesTypeAdapter.validate_json(json.dumps(history))


@pytest.mark.parametrize(
    ('history', 'location', 'reason'),
    [
        (
            [
                request(user('a')),
                request(user('b')),
                request(user('c')),
                response({'tool_name': 't', 'args': {}, 'part_kind': 'text', 'content': 1}),
            ],
            'messages[3].parts[0].content',
            'expected str, got int',
        ),
        (
            [
                request(
                    user('a'),
                    {'tool_name': 't', 'content': 'x', 'part_kind': 'tool-return'},
                    {'part_kind': 'tool-return'},
                )
            ],
            'messages[0].parts[2].tool_name',
            'field required',
        ),
        ([{'parts': [], 'kind': 'reply'}], 'messages[0].kind', 'unknown message kind (expected'),
        ([{'parts': []}], 'messages[0].kind', 'field required'),
        ([request()] * 2 + [{'kind': 'request'}], 'messages[2].parts', 'field required'),
        ([request(user('a'), timestamp='yesterday')], 'messages[0].timestamp', 'invalid'),
        (
            [request({'content': 'x', 'part_kind': 'user-prompt', 'timestamp': 5.5j and 'nope'})],
            'messages[0].parts[0].timestamp',
            'invalid',
        ),
        (
            [response({'content': 'hi', 'part_kind': 'user-prompt'})],
            'messages[0].parts[0].part_kind',
            "a 'user-prompt' part cannot appear in a response",
        ),
        ([request({'content': 'x'})], 'messages[0].parts[0].part_kind', 'field required'),
        ([request(user('a'), state='paused')], 'messages[0].state', 'invalid enum value'),
        ({'kind': 'request'}, 'messages', 'expected a list of messages'),
        ([7], 'messages[0]', 'expected an object, got a number'),
        (
            [
                request(
                    {
                        'content': [{'kind': 'binary', 'data': '***', 'media_type': 'image/png'}],
                        'part_kind': 'user-prompt',
                    }
                )
            ],
            'messages[0].parts[0].content[0].data',
            'invalid base64',
        ),
    ],
)
def test_bad_input_names_the_place(history: Any, location: str, reason: str) -> None:
    with pytest.raises(MessageValidationError) as info:
        load(history)
    assert info.value.location == location
    assert reason in info.value.reason
    assert str(info.value).startswith(location)
    assert isinstance(info.value, ValueError)


def test_malformed_json() -> None:
    with pytest.raises(MessageValidationError, match=r'^messages: invalid JSON'):
        ModelMessagesTypeAdapter.validate_json(b'[{"kind": "request", "parts": [')


def test_legacy_aliases_load() -> None:
    legacy = response(
        {'content': 'hi', 'part_kind': 'text'},
        usage={'request_tokens': 7, 'response_tokens': 3, 'total_tokens': 10, 'requests': 1, 'details': None},
        vendor_details={'x': 1},
        vendor_id='resp_1',
        model_name='old',
    )
    [message] = load([legacy])
    assert isinstance(message, ModelResponse)
    assert message.usage == RequestUsage(input_tokens=7, output_tokens=3)
    assert (message.provider_details, message.provider_response_id) == ({'x': 1}, 'resp_1')
    [delta_request] = load([request({'added': ['search'], 'part_kind': 'tool-availability-delta'})])
    assert delta_request.parts == [ToolAvailabilityDeltaPart(tools_added=['search'])]


def test_newer_kinds_load_as_opaque_and_round_trip_unchanged() -> None:
    speech = {'content': 'hello', 'voice': 'x', 'part_kind': 'speech'}
    structured = {'content': 'v=1', 'metadata': None, 'kind': 'structured-content', 'value': {'v': 1}}
    history = [
        request(user('a'), {'content': [structured, 'text'], 'timestamp': TS, 'part_kind': 'user-prompt'}),
        response(speech),
    ]
    loaded = load(history)
    assert loaded[1].parts == [OpaquePart(speech)]
    assert loaded[0].parts[1].content[0] == OpaqueContent(structured)
    assert json.loads(ModelMessagesTypeAdapter.dump_json(loaded))[1]['parts'] == [speech]
    assert json.loads(ModelMessagesTypeAdapter.dump_json(loaded))[0]['parts'][1]['content'][0] == structured


def test_newer_reference_fields_are_kept() -> None:
    newer = response({'content': 'hi', 'part_kind': 'text'}, model_id='test:test')
    [message] = load([newer])
    assert message.model_id == 'test:test'
    assert json.loads(ModelMessagesTypeAdapter.dump_json([message]))[0]['model_id'] == 'test:test'
    [plain] = load([response({'content': 'hi', 'part_kind': 'text'})])
    assert 'model_id' not in json.loads(ModelMessagesTypeAdapter.dump_json([plain]))[0]


def tool_return(content: Any) -> dict[str, Any]:
    return {'tool_name': 't', 'content': content, 'tool_call_id': 'c', 'timestamp': TS, 'part_kind': 'tool-return'}


def test_multimodal_items_in_tool_returns_are_rebuilt_wherever_they_sit() -> None:
    image = {'url': 'https://x/a.png', 'kind': 'image-url', 'media_type': 'image/png', 'extra': 1}
    binary = {'data': 'aGk=', 'media_type': 'text/plain', 'kind': 'binary'}
    upload = {'file_id': 'f.pdf', 'provider_name': 'openai', 'kind': 'uploaded-file'}
    content = {'kind': 'image-url', 'items': [image, {'deep': {'b': binary}}], 'u': upload}
    [message] = load([request(tool_return(content))])
    got = message.parts[0].content
    assert isinstance(got['items'][0], ImageUrl) and got['items'][0].url == 'https://x/a.png'
    assert isinstance(got['items'][1]['deep']['b'], BinaryContent) and got['items'][1]['deep']['b'].data == b'hi'
    assert isinstance(got['u'], UploadedFile)
    assert got['kind'] == 'image-url'  # the outer mapping only reuses a kind value: it stays a mapping
    [alone] = load([request(tool_return(image))])
    assert isinstance(alone.parts[0].content, ImageUrl)


def test_look_alike_mappings_stay_mappings() -> None:
    no_media_type = {'url': 'https://x/a.png', 'kind': 'image-url'}
    not_binary = {'kind': 'binary', 'label': 'foo'}
    empty_media = {'url': 'u', 'kind': 'image-url', 'media_type': ''}
    [message] = load([request(tool_return([no_media_type, not_binary, empty_media]))])
    assert message.parts[0].content == [no_media_type, not_binary, empty_media]
    assert json.loads(ModelMessagesTypeAdapter.dump_json([message]))[0]['parts'][0]['content'] == [
        no_media_type,
        not_binary,
        empty_media,
    ]


def test_non_string_keys_only_survive_python_round_trip() -> None:
    from threadline.messages import ModelRequest

    nested = ImageUrl('https://x/a.png')
    part = ToolReturnPart('t', {1: {'img': nested}}, 'c')
    history = [ModelRequest(parts=[part])]
    back = ModelMessagesTypeAdapter.validate_python(ModelMessagesTypeAdapter.dump_python(history))
    # 000: the non-str-keyed mapping passes through as it is, so the item below it stays a plain dict
    assert list(back[0].parts[0].content) == [1]
    assert (
        back[0].parts[0].content[1]['img']
        == ModelMessagesTypeAdapter.dump_python(history)[0]['parts'][0]['content'][1]['img']
    )
    assert isinstance(back[0].parts[0].content[1]['img'], dict)
    via_json = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(history))
    assert via_json[0].parts[0].content == {'1': {'img': nested}}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
field_names = st.sampled_from(
    [
        'kind',
        'parts',
        'part_kind',
        'content',
        'timestamp',
        'tool_name',
        'tool_call_id',
        'args',
        'usage',
        'state',
        'url',
        'data',
        'media_type',
        'metadata',
        'retry',
        'outcome',
        'run_id',
    ]
)
tags = st.sampled_from(
    [
        'request',
        'response',
        'user-prompt',
        'text',
        'tool-call',
        'tool-return',
        'retry-prompt',
        'system-prompt',
        'image-url',
        'binary',
        'thinking',
        'file',
        'compaction',
        'speech',
        'retry-feedback',
        'cache-point',
    ]
)
shaped = st.recursive(
    json_values | tags | st.just(TS),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(field_names, inner | tags, max_size=6),
    max_leaves=30,
)


@settings(max_examples=examples(400), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(shaped, max_size=4) | shaped)
def test_fuzz_loader_only_loads_or_raises_our_error(document: Any) -> None:
    raw = json.dumps(document)
    try:
        loaded = ModelMessagesTypeAdapter.validate_json(raw)
    except MessageValidationError:
        return
    assert ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(loaded)) == loaded


@settings(max_examples=examples(200))
@given(st.binary(max_size=64))
def test_fuzz_loader_on_arbitrary_bytes(raw: bytes) -> None:
    with contextlib.suppress(MessageValidationError):
        ModelMessagesTypeAdapter.validate_json(raw)


def _wire_objects(history: list[Any]) -> list[dict[str, Any]]:
    """The objects of `history` that are wire structs Threadline declares (messages, their usage,
    parts and content items of known kinds); user data (arguments, metadata) and parts of newer
    kinds keep every key, so they are left out."""
    from threadline.messages._codec import _CONTENT_TYPES, _PART_TYPES_REQUEST, _PART_TYPES_RESPONSE

    known_parts = {*_PART_TYPES_REQUEST, *_PART_TYPES_RESPONSE}
    found: list[dict[str, Any]] = []
    for message in history:
        found.append(message)
        if isinstance(message.get('usage'), dict):
            found.append(message['usage'])
        for part in message.get('parts', []):
            if part.get('part_kind') not in known_parts:
                continue
            found.append(part)
            content = part.get('content') if part.get('part_kind') == 'user-prompt' else None
            for item in content if isinstance(content, list) else []:
                if isinstance(item, dict) and item.get('kind') in _CONTENT_TYPES:
                    found.append(item)
    return found


WIRE = sorted((Path(__file__).parents[1] / 'data' / 'vectors' / 'wire').glob('*.json'))


@settings(max_examples=examples(200))
@given(st.sampled_from(WIRE), st.data())
def test_fields_from_a_newer_writer_anywhere_are_ignored_on_both_paths(path: Path, data: st.DataObject) -> None:
    """The fast decoder ignores undeclared fields as the careful loader does: adding them to any
    wire objects of a history the reference wrote changes nothing that loads."""
    original = json.loads(path.read_text())
    loaded = ModelMessagesTypeAdapter.validate_json(json.dumps(original))
    objects = _wire_objects(original)
    chosen = data.draw(st.lists(st.sampled_from(objects), min_size=1, max_size=6))
    names = st.from_regex(r'x_[a-z]{1,8}', fullmatch=True)
    extra = data.draw(st.dictionaries(names, json_values, min_size=1, max_size=2))
    for obj in chosen:
        obj.update(extra)
    try:
        document = json.dumps(original, allow_nan=False)
    except ValueError:
        assume(False)  # NaN and infinities are not JSON
    assert ModelMessagesTypeAdapter.validate_json(document) == loaded
    assert ModelMessagesTypeAdapter.validate_python(original) == loaded


def test_a_legacy_name_as_a_value_or_beside_unknown_fields_is_handled() -> None:
    legacy = response({'content': 'vendor_id', 'part_kind': 'text', 'x_new': 1}, vendor_id='resp_1', x_other=[1])
    [message] = load([legacy])
    assert message.provider_response_id == 'resp_1' and message.parts[0].content == 'vendor_id'
    [plain] = load([response({'content': '"added"', 'part_kind': 'text'})])  # a value, quoted
    assert plain.parts[0].content == '"added"'


@pytest.mark.parametrize(
    'history',
    [
        [{'parts': [], 'kind': 'card 4111-1111'}],
        [
            {
                'kind': 'request',
                'parts': [
                    {
                        'part_kind': 'tool-return',
                        'tool_name': 't',
                        'tool_call_id': 'c',
                        'content': 'x',
                        'outcome': 'card 4111-1111',
                    }
                ],
            }
        ],
        [{'kind': 'response', 'parts': [], 'state': 'card 4111-1111'}],
    ],
)
def test_an_error_says_where_the_bad_value_is_never_what_it_is(history: Any) -> None:
    for load in (
        ModelMessagesTypeAdapter.validate_python,
        lambda h: ModelMessagesTypeAdapter.validate_json(json.dumps(h)),
    ):
        with pytest.raises(MessageValidationError) as info:
            load(history)
        assert '4111' not in str(info.value) and info.value.location.startswith('messages[0]')


def test_a_value_equal_to_a_legacy_name_stays_on_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Legacy names are caught by the typed decoder as keys only: a tool argument, a text or a
    dict key inside free-form data that spells one never sends the history to the careful loader."""
    from threadline.messages import _codec

    careful: list[str] = []
    real = _codec._load_message
    monkeypatch.setattr(_codec, '_load_message', lambda item, loc: careful.append(loc) or real(item, loc))
    call = {'tool_name': 'f', 'args': {'added': ['x'], 'vendor_id': 'v'}, 'tool_call_id': 'c', 'part_kind': 'tool-call'}
    values = [request(user('"added" "request_tokens"')), response(call, provider_details={'vendor_details': 1})]
    loaded = load(values)
    assert careful == []
    assert loaded[1].parts[0].args == {'added': ['x'], 'vendor_id': 'v'}
    legacy = [*values, response({'content': 'x', 'part_kind': 'text'}, vendor_id='r', usage={'request_tokens': 2})]
    assert [m.provider_response_id for m in load(legacy) if isinstance(m, ModelResponse)] == [None, 'r']
    assert careful == ['messages[2]']  # only the message that uses a legacy key
    assert load(legacy)[2].usage.input_tokens == 2


def test_a_legacy_name_beside_its_current_name_loses() -> None:
    [message] = load(
        [response(vendor_id='old', provider_response_id='new', usage={'request_tokens': 1, 'input_tokens': 5})]
    )
    assert message.provider_response_id == 'new' and message.usage.input_tokens == 5


def test_the_decode_only_legacy_fields_are_invisible() -> None:
    import dataclasses

    import msgspec

    message = ModelResponse(parts=[])
    assert not any(f.name.startswith('_legacy') for f in dataclasses.fields(ModelResponse))
    assert b'vendor' not in msgspec.json.encode(message) and 'legacy' not in repr(message)
    assert 'request_tokens' not in ModelMessagesTypeAdapter.dump_python([message])[0]['usage']
    with pytest.raises(TypeError):
        ModelResponse(parts=[], vendor_id='x')  # type: ignore[call-arg]
