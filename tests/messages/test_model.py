"""The message model used the way the documents use it: construction, editing, equality, repr."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from datetime import UTC, datetime, timezone
from decimal import Decimal

import pytest

from threadline import ModelMessagesTypeAdapter
from threadline.messages import (
    AudioUrl,
    BinaryContent,
    CachePoint,
    CompactionPart,
    DocumentUrl,
    ImageUrl,
    ModelRequest,
    ModelResponse,
    RequestUsage,
    RetryFeedbackPart,
    RetryInfo,
    RunUsage,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolAvailabilityDeltaPart,
    ToolCallPart,
    ToolReturnPart,
    UploadedFile,
    UserPromptPart,
    VideoUrl,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def test_positional_order_matches_the_reference() -> None:
    call = ToolCallPart('get_weather', {'city': 'Paris'}, 'call_1')
    assert (call.tool_name, call.args, call.tool_call_id) == ('get_weather', {'city': 'Paris'}, 'call_1')
    ret = ToolReturnPart('get_weather', 'sunny', 'call_1')
    assert (ret.tool_name, ret.content, ret.tool_call_id, ret.outcome) == ('get_weather', 'sunny', 'call_1', 'success')
    assert UserPromptPart('hi').content == 'hi'
    assert SystemPromptPart('be brief').content == 'be brief'
    assert TextPart('answer').content == 'answer'
    with pytest.raises(TypeError):
        ToolReturnPart('t', 'c', 'id', 'function')  # type: ignore[misc]  # tool_kind is keyword-only


def test_defaults() -> None:
    request = ModelRequest(parts=[])
    assert request.timestamp is None and request.state == 'complete' and request.kind == 'request'
    response = ModelResponse(parts=[])
    assert response.timestamp.tzinfo is not None and response.usage == RequestUsage()
    assert ToolCallPart('t').tool_call_id.startswith('pyd_ai_')
    assert ToolCallPart('t').tool_call_id != ToolCallPart('t').tool_call_id
    assert UserPromptPart('x').part_kind == 'user-prompt'
    assert SystemPromptPart('x').scope == 'conversation'


def test_dataclasses_replace_on_parts_and_messages() -> None:
    part = UserPromptPart('hello', timestamp=T0)
    edited = dataclasses.replace(part, content='[redacted]')
    assert edited == UserPromptPart('[redacted]', timestamp=T0) and part.content == 'hello'
    message = ModelRequest(parts=[part], run_id='r1', metadata={'a': 1})
    replaced = dataclasses.replace(message, parts=[edited])
    assert replaced.parts == [edited] and replaced.run_id == 'r1' and replaced.metadata == {'a': 1}
    assert dataclasses.is_dataclass(message)
    assert 'parts' in {f.name for f in dataclasses.fields(message)}
    usage = dataclasses.replace(RequestUsage(unmeasured_requests=2), input_tokens=3)
    assert usage.unmeasured_requests == 2 and usage.input_tokens == 3
    with pytest.raises(TypeError):
        dataclasses.replace(part, no_such_field=1)


def test_every_class_supports_replace() -> None:
    samples = [
        SystemPromptPart('s'),
        UserPromptPart('u'),
        ToolReturnPart('t', 'c', 'i'),
        ToolCallPart('t', {}, 'i'),
        RetryFeedbackPart('bad', retry=RetryInfo('model_retry')),
        TextPart('t'),
        ThinkingPart('th'),
        CompactionPart('summary'),
        ToolAvailabilityDeltaPart(tools_added=['x']),
        ImageUrl('https://x/a.png'),
        BinaryContent(b'1', media_type='image/png'),
        UploadedFile('f.pdf', 'openai'),
        CachePoint(),
        RequestUsage(input_tokens=1),
        RunUsage(requests=1),
        ModelRequest(parts=[]),
        ModelResponse(parts=[]),
    ]
    for sample in samples:
        assert dataclasses.replace(sample) == sample, type(sample).__name__
        assert copy.deepcopy(sample) == sample
        assert pickle.loads(pickle.dumps(sample)) == sample


def test_equality_is_by_value() -> None:
    assert ModelRequest(parts=[UserPromptPart('a', timestamp=T0)]) == ModelRequest(
        parts=[UserPromptPart('a', timestamp=T0)]
    )
    assert TextPart('a') != TextPart('b')
    assert TextPart('a') != ThinkingPart('a')


def test_repr_is_readable_and_omits_defaults() -> None:
    assert repr(TextPart('hi')) == "TextPart(content='hi')"
    assert repr(RequestUsage(input_tokens=55, output_tokens=12)) == 'RequestUsage(input_tokens=55, output_tokens=12)'
    assert repr(ModelRequest(parts=[], run_id='r')) == "ModelRequest(parts=[], run_id='r')"


def test_tool_call_args_helpers() -> None:
    cut = ToolCallPart('f', '{"a": 1, "b": "trunc', 'c9')
    assert cut.args_as_dict() == {'INVALID_JSON': '{"a": 1, "b": "trunc'}
    assert cut.args_as_json_str() == '{"INVALID_JSON":"{\\"a\\": 1, \\"b\\": \\"trunc"}'
    assert ToolCallPart('f', {'a': 1}, 'c').args_as_json_str() == '{"a":1}'
    assert ToolCallPart('f', '{"a": 1}', 'c').args_as_dict() == {'a': 1}
    assert ToolCallPart('f', None, 'c').args_as_dict() == {}
    assert [
        cut.has_content(),
        ToolCallPart('f', None, 'c').has_content(),
        ToolCallPart('f', {}, 'c').has_content(),
    ] == [
        True,
        False,
        False,
    ]


def test_file_urls_fill_media_type_and_identifier() -> None:
    image = ImageUrl('https://example.com/cat.png')
    assert image.media_type == 'image/png' and image.identifier == '750ff4'
    assert AudioUrl('https://example.com/a.mp3').media_type == 'audio/mpeg'
    assert DocumentUrl('https://example.com/doc.pdf').media_type == 'application/pdf'
    assert VideoUrl('https://youtu.be/abc').media_type == 'video/mp4'
    assert DocumentUrl('https://example.com/no-extension').media_type is None
    assert ImageUrl('https://x/y', media_type='image/jpeg').media_type == 'image/jpeg'
    assert UploadedFile('file-abc123', 'openai').media_type == 'application/octet-stream'
    assert UploadedFile('file-abc123', 'openai').identifier == '3a1a6c'


def test_binary_content_keeps_bytes_and_dumps_url_safe_base64() -> None:
    data = bytes([0xFB, 0xFF, 0xFE])
    content = BinaryContent(data, media_type='application/octet-stream')
    assert content.data == data and isinstance(content.data, bytes)
    dumped = ModelMessagesTypeAdapter.dump_python(
        [ModelRequest(parts=[UserPromptPart([content], timestamp=T0)])], mode='json'
    )
    assert dumped[0]['parts'][0]['content'][0]['data'] == '-__-'
    with pytest.raises(TypeError):
        BinaryContent('not bytes', media_type='text/plain')  # type: ignore[arg-type]


def test_usage_wire_form_and_arithmetic() -> None:
    usage = RequestUsage(input_tokens=10, output_tokens=5, cost=Decimal('0.0012'), details={'reasoning': 2})
    dumped = ModelMessagesTypeAdapter.dump_python([ModelResponse(parts=[], usage=usage, timestamp=T0)], mode='json')
    wire_usage = dumped[0]['usage']
    assert wire_usage['cost'] == '0.0012' and 'unmeasured_requests' not in wire_usage
    assert list(wire_usage)[:5] == [
        'input_tokens',
        'cache_write_tokens',
        'cache_write_1h_tokens',
        'cache_read_tokens',
        'output_tokens',
    ]
    total = usage + RequestUsage(input_tokens=1, details={'reasoning': 1}, unmeasured_requests=1)
    assert (total.input_tokens, total.details, total.unmeasured_requests, total.total_tokens) == (
        11,
        {'reasoning': 3},
        1,
        16,
    )
    run = RunUsage()
    run.incr(usage)
    run.incr(RunUsage(requests=2, tool_calls=1, input_tokens=1))
    assert (run.input_tokens, run.requests, run.tool_calls, run.cost) == (11, 2, 1, Decimal('0.0012'))
    assert usage.details == {'reasoning': 2}  # adding never mutates the operands
    run_wire = ModelMessagesTypeAdapter.dump_python([ModelResponse(parts=[], usage=usage)], mode='json')[0]['usage']
    assert 'requests' not in run_wire


def test_metadata_survives_python_round_trip_exactly_and_json_normalizes() -> None:
    stamp = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    metadata = {'pair': (1, 2), 'when': stamp, 'nested': {'tags': ('a',)}}
    history = [
        ModelRequest(parts=[ToolReturnPart('t', 'ok', 'c1', metadata=metadata, timestamp=T0)], metadata={'k': (1,)})
    ]
    back = ModelMessagesTypeAdapter.validate_python(ModelMessagesTypeAdapter.dump_python(history))
    assert back == history and back[0].parts[0].metadata['pair'] == (1, 2)
    via_json = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(history))
    assert via_json[0].parts[0].metadata == {'pair': [1, 2], 'when': '2024-05-01T12:00:00Z', 'nested': {'tags': ['a']}}
    assert via_json[0].metadata == {'k': [1]}


def test_timestamps_serialize_like_the_reference() -> None:
    from datetime import timedelta

    cases = {
        datetime(2024, 1, 1, 0, 0, 1, tzinfo=UTC): '2024-01-01T00:00:01Z',
        datetime(2024, 1, 1, 0, 0, 1, 120, tzinfo=UTC): '2024-01-01T00:00:01.000120Z',
        datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=9))): '2024-01-01T00:00:00+09:00',
        datetime(2024, 1, 1): '2024-01-01T00:00:00',
    }
    for value, expected in cases.items():
        dumped = ModelMessagesTypeAdapter.dump_python([ModelRequest(parts=[], timestamp=value)], mode='json')
        assert dumped[0]['timestamp'] == expected
