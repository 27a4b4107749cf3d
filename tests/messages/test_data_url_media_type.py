"""A `data:` URL names its media type only with a `type/subtype` header; `data://x.png` is no data
URL and names none (it gave `//x.png`)."""

from __future__ import annotations

import pytest

from threadline.messages import (
    DocumentUrl,
    ImageUrl,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
)


@pytest.mark.parametrize(
    ('url', 'expected'),
    [
        ('data:image/png;base64,AAAA', 'image/png'),
        ('data:,hello', 'text/plain'),
        ('data:;base64,AA', 'text/plain'),
        ('data://x.png', None),
        ('data://example.com/a.pdf', None),
        ('data:not a type,x', None),
    ],
)
def test_a_data_url_media_type(url: str, expected: str | None) -> None:
    for kind in (ImageUrl, DocumentUrl):
        assert kind(url).media_type == expected


def test_dump_python_json_mode_is_what_the_json_decodes_to() -> None:
    history = [
        ModelResponse(parts=[ToolCallPart('t', {'a': (1, 2)}, 'c')]),
        ModelRequest(parts=[ToolReturnPart('t', (1, (2, 3)), 'c', metadata={'k': (1,)})]),
    ]
    dumped = ModelMessagesTypeAdapter.dump_python(history, mode='json')
    assert dumped[0]['parts'][0]['args'] == {'a': [1, 2]}
    assert dumped[1]['parts'][0]['content'] == [1, [2, 3]] and dumped[1]['parts'][0]['metadata'] == {'k': [1]}
