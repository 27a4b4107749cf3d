"""A messages snapshot is encoded as the `ag-ui-protocol` package's own `EventEncoder` writes it.

`encode` writes `MESSAGES_SNAPSHOT` events in one pass (`ui.ag_ui._wire`) instead of through the
package's per-model serializer; the client reads the same bytes either way. Checked over the
random histories of the provider tests (every part kind), text that JSON must escape, and the
optional fields the package leaves out when they have no value.
"""

from __future__ import annotations

import json

from ag_ui.core import AssistantMessage, FunctionCall, MessagesSnapshotEvent, ToolCall, UserMessage
from ag_ui.encoder import EventEncoder
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.compat._histories import history
from threadline.messages import ModelMessagesTypeAdapter, ModelRequest, ModelResponse, TextPart, UserPromptPart
from threadline.ui.ag_ui import AGUIAdapter, encode


def _same_as_the_package(event: MessagesSnapshotEvent) -> None:
    ours, theirs = encode(event), EventEncoder().encode(event)
    assert ours == theirs, (ours[:300], theirs[:300])


def test_a_snapshot_of_any_history_is_written_as_the_package_writes_it() -> None:
    for seed in range(60):
        messages = ModelMessagesTypeAdapter.validate_python(history(seed, 'openai'))
        dumped = AGUIAdapter.dump_messages(messages, generate_message_id=map(str, range(10_000)).__next__)
        _same_as_the_package(MessagesSnapshotEvent(messages=dumped))


def test_optional_fields_without_a_value_are_left_out_and_extras_kept() -> None:
    call = ToolCall(id='c1', type='function', function=FunctionCall(name='f', arguments='{}'))
    event = MessagesSnapshotEvent(
        messages=[
            AssistantMessage(id='a', role='assistant', content=None, tool_calls=[call]),
            AssistantMessage(id='b', role='assistant', content='hi', name='bot'),
            UserMessage.model_validate({'id': 'u', 'role': 'user', 'content': 'x', 'someExtra': None}),
        ],
        timestamp=1,
    )
    _same_as_the_package(event)
    first = json.loads(encode(event)[len('data: ') :])['messages'][0]
    assert 'content' not in first and first['toolCalls'][0]['function'] == {'name': 'f', 'arguments': '{}'}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=30), min_size=1, max_size=6))
def test_any_text_is_escaped_as_the_package_escapes_it(texts: list[str]) -> None:
    messages = [
        m
        for text in texts
        for m in (ModelRequest(parts=[UserPromptPart(text)]), ModelResponse(parts=[TextPart(text + '!')]))
    ]
    _same_as_the_package(
        MessagesSnapshotEvent(messages=AGUIAdapter.dump_messages(messages, generate_message_id=lambda: 'id'))
    )
