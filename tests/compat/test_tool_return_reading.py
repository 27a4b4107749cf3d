"""`ToolReturnPart`'s reading helpers (`model_response_str`, `model_response_object`, `files`,
`structured_content`, `content_items`, `has_content`, `model_response_str_and_user_content`,
`typed_content`) as pydantic-ai 2.62 has them: the same
parts built on both libraries, every helper's answer compared, over hand-picked and generated
content."""

import dataclasses
import datetime
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

OUTCOMES = ['success', 'failed', 'retried', 'denied', 'interrupted']


@dataclasses.dataclass
class Point:
    x: int
    y: int


def _part(lib: str, content: Any, outcome: str) -> Any:
    if lib == 'ref':
        from pydantic_ai import messages
    else:
        from threadline import messages  # type: ignore[no-redef]
    files = {
        'image': messages.ImageUrl('https://example.com/a.png'),
        'bytes': messages.BinaryContent(b'\x89PNG', media_type='image/png'),
    }
    built = (
        [files.get(c, c) if isinstance(c, str) else c for c in content]
        if isinstance(content, list)
        else files.get(content, content)
        if isinstance(content, str)
        else content
    )
    return messages.ToolReturnPart('tool', built, 'call-1', outcome=outcome)


def _read(part: Any) -> list[Any]:
    def kind(items: list[Any]) -> list[Any]:
        return [type(i).__name__ if hasattr(i, 'media_type') else i for i in items]

    return [
        part.model_response_str(),
        part.model_response_str(wrap_if_error=False),
        part.model_response_object(),
        part.model_response_object(wrap_if_error=False),
        kind(structured) if isinstance(structured := part.structured_content(), list) else structured,
        part.has_content(),
        kind(part.files),
        kind(part.content_items(mode='str')),
        kind(part.content_items(mode='jsonable')),
        kind(part.content_items(mode='str', wrap_if_error=False)),
        _with_user_content(part.model_response_str_and_user_content()),
        _with_user_content(part.model_response_str_and_user_content(wrap_if_error=False)),
        kind(typed) if isinstance(typed := part.typed_content, list) else kind([typed]),
    ]


def _with_user_content(read: tuple[str, list[Any]]) -> tuple[str, list[Any]]:
    text, items = read
    return text, [(type(i).__name__, i.identifier) if hasattr(i, 'media_type') else i for i in items]


CONTENTS = [
    'plain text',
    '',
    None,
    {'a': 1, 'b': [1, 2]},
    [1, 2, 3],
    ['one item'],
    3,
    2.5,
    True,
    datetime.date(2026, 12, 7),
    datetime.datetime(2026, 12, 7, 12, 30, tzinfo=datetime.UTC),
    uuid.UUID(int=7),
    Point(1, 2),
    '{"json": "in a string"}',
    '[1, 2]',
    [{'loc': ['a'], 'msg': 'bad', 'type': 'int_parsing'}],
    'image',
    ['look at this', 'image'],
    ['image', 'bytes'],
    ['caption', {'k': 'v'}, 'image'],
]


@pytest.mark.parametrize('outcome', OUTCOMES)
@pytest.mark.parametrize('content', CONTENTS, ids=lambda c: repr(c)[:30])
def test_every_helper_reads_a_tool_return_as_pydantic_ai_does(content: Any, outcome: str) -> None:
    assert _read(_part('ours', content, outcome)) == _read(_part('ref', content, outcome))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(content=json_values, outcome=st.sampled_from(OUTCOMES))
def test_any_json_content_reads_the_same(content: Any, outcome: str) -> None:
    assert _read(_part('ours', content, outcome)) == _read(_part('ref', content, outcome))


def _response_helpers(lib: str) -> list[Any]:
    if lib == 'ref':
        from pydantic_ai import messages
        from pydantic_ai.usage import RequestUsage, RunUsage
    else:
        from threadline import messages  # type: ignore[no-redef]
        from threadline.usage import RequestUsage, RunUsage  # type: ignore[assignment]
    image = messages.BinaryImage(b'\x89PNG', media_type='image/png')
    audio = messages.BinaryContent(b'RIFF', media_type='audio/wav')
    response = messages.ModelResponse(
        parts=[
            messages.TextPart('here'),
            messages.FilePart(image),
            messages.FilePart(audio),
            messages.NativeToolCallPart('web_search', {'q': 'x'}, tool_call_id='n1'),
            messages.NativeToolReturnPart('web_search', {'hits': 1}, tool_call_id='n1'),
            messages.NativeToolCallPart('code', {}, tool_call_id='n2'),  # no return: left out
        ]
    )
    usage = RequestUsage(input_tokens=200, cache_read_tokens=50, output_tokens=5)
    return [
        [f.media_type for f in response.files],
        [f.media_type for f in response.images],
        [(c.tool_call_id, r.content) for c, r in response.native_tool_calls],
        usage.requests,
        usage.cache_hit_ratio,
        RequestUsage().cache_hit_ratio,
        RunUsage(input_tokens=10, cache_read_tokens=1).cache_hit_ratio,
    ]


def test_a_responses_and_a_usages_helpers() -> None:
    assert _response_helpers('ours') == _response_helpers('ref')
