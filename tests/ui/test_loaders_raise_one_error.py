"""Both UI loaders raise `pydantic.ValidationError`, and only that, for anything a client sends:
the inputs fuzzing found raising AttributeError, binascii.Error, RecursionError or
UnicodeEncodeError, and random mutations of real messages."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples
from threadline.storage.testing import turn
from threadline.ui.ag_ui import AGUIAdapter
from threadline.ui.vercel_ai import VercelAIAdapter

VERCEL_CASES: list[Any] = [
    [{'id': 'u', 'role': 'user', 'parts': [{'type': 'text', 'text': '\ud800'}]}],
    [
        {
            'id': 'u',
            'role': 'user',
            'parts': [{'type': 'file', 'mediaType': 'image/png', 'url': 'data:image/png;base64,!!'}],
        }
    ],
    [{'id': 'u', 'role': 'user', 'parts': [{'type': 'file', 'mediaType': 'image/png', 'url': 'data:x'}]}],
    [{'id': 'u', 'role': 'user', 'parts': [{'type': None}]}],
    [
        {
            'id': 'a',
            'role': 'assistant',
            'parts': [
                {
                    'type': 'tool-x',
                    'toolCallId': 'c',
                    'state': 'input-available',
                    'input': json.loads('[' * 500 + ']' * 500),
                }
            ],
        }
    ],
    [{'id': 'a', 'role': 'assistant', 'parts': [{'type': 'source-url', 'sourceId': 's', 'url': '\udfff'}]}],
]
AG_UI_CASES: list[Any] = [
    [{'id': 'u', 'role': 'user', 'content': '\ud800'}],
    [{'id': 'u', 'role': 'user', 'content': None}],
    [{'id': 'u', 'role': 'user', 'content': json.loads('[' * 500 + ']' * 500)}],
]


@pytest.mark.parametrize('messages', VERCEL_CASES)
def test_the_vercel_loader_raises_only_its_validation_error(messages: Any) -> None:
    with pytest.raises(pydantic.ValidationError):
        VercelAIAdapter.load_messages(messages)


@pytest.mark.parametrize('messages', AG_UI_CASES)
def test_the_ag_ui_loader_raises_only_its_validation_error(messages: Any) -> None:
    with pytest.raises(pydantic.ValidationError):
        AGUIAdapter.load_messages(messages)


UI = [m.model_dump(mode='json', by_alias=True) for m in VercelAIAdapter.dump_messages(turn(0) + turn(1))]
AG = [m.model_dump(mode='json', by_alias=True) for m in AGUIAdapter.dump_messages(turn(0) + turn(1))]
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(alphabet=st.characters(codec=None)),
    st.sampled_from(
        ['file', 'text', 'tool-x', 'data-x', 'dynamic-tool', 'data:,x', 'data:a;base64,@@', 'user', 'tool']
    ),
    st.lists(st.none(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.none(), max_size=2),
)


def _mutated(base: list[Any], data: st.DataObject) -> list[Any]:
    messages = json.loads(json.dumps(base))
    for _ in range(data.draw(st.integers(1, 4))):
        target: Any = messages
        while True:  # walk to a random container, then replace one of its values
            keys = list(target) if isinstance(target, dict) else list(range(len(target)))
            if not keys:
                break
            key = data.draw(st.sampled_from(keys))
            if isinstance(target[key], (dict, list)) and target[key] and data.draw(st.booleans()):
                target = target[key]
                continue
            target[key] = data.draw(VALUES)
            break
    return messages


@settings(max_examples=examples(300), deadline=None)
@given(st.data())
def test_mutated_messages_raise_only_validation_errors(data: st.DataObject) -> None:
    for adapter, base in ((VercelAIAdapter, UI), (AGUIAdapter, AG)):
        with contextlib.suppress(pydantic.ValidationError):  # any other exception fails the test
            adapter.load_messages(_mutated(base, data))


def test_the_vercel_round_trip_keeps_tool_arguments_as_the_model_sent_them() -> None:
    from threadline.messages import (
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    history = [
        ModelRequest(parts=[UserPromptPart('weather?')]),
        ModelResponse(parts=[ToolCallPart('w', '{"city":  "Paris"}', 'c1')]),
        ModelRequest(parts=[ToolReturnPart('w', 'sunny', 'c1')]),
        ModelResponse(parts=[TextPart('Sunny.')]),
    ]
    ui = [m.model_dump(mode='json', by_alias=True) for m in VercelAIAdapter.dump_messages(history)]
    back = VercelAIAdapter.load_messages(json.loads(json.dumps(ui)))
    [call] = [p for m in back for p in m.parts if isinstance(p, ToolCallPart)]
    assert call.args == '{"city":  "Paris"}'  # the same text, so the next request has the same bytes
    edited = json.loads(json.dumps(ui))
    tool = next(p for m in edited for p in m['parts'] if p['type'] == 'tool-w')
    tool['input'] = {'city': 'Rome'}  # a client that changed the input: its input wins
    [changed] = [p for m in VercelAIAdapter.load_messages(edited) for p in m.parts if isinstance(p, ToolCallPart)]
    assert changed.args == {'city': 'Rome'}
