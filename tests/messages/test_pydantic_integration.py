"""Messages inside a user's pydantic model, and `TypeAdapter(list[ModelMessage])`, use our JSON."""

from __future__ import annotations

import json

import pydantic
import pytest

from tests.conftest import VECTORS, vector_names
from threadline import ModelMessage, ModelMessagesTypeAdapter
from threadline.messages import ModelRequest, TextPart, UserPromptPart


class Conversation(pydantic.BaseModel):
    title: str
    messages: list[ModelMessage]


@pytest.mark.parametrize('name', vector_names('wire'))
def test_type_adapter_matches_our_json(name: str) -> None:
    raw = (VECTORS / 'wire' / name).read_bytes()
    ours = ModelMessagesTypeAdapter.validate_json(raw)
    adapter = pydantic.TypeAdapter(list[ModelMessage])
    theirs = adapter.validate_json(raw)
    assert theirs == ours
    assert json.loads(adapter.dump_json(theirs)) == json.loads(ModelMessagesTypeAdapter.dump_json(ours))
    assert adapter.validate_python(adapter.dump_python(theirs)) == ours
    assert adapter.dump_python(theirs, mode='json') == ModelMessagesTypeAdapter.dump_python(ours, mode='json')


def test_field_in_a_user_model() -> None:
    raw = (VECTORS / 'wire' / '02_system_prompt_and_tools.json').read_bytes()
    history = ModelMessagesTypeAdapter.validate_json(raw)
    model = Conversation(title='weather', messages=history)
    dumped = model.model_dump_json()
    assert json.loads(dumped)['messages'] == json.loads(raw)
    again = Conversation.model_validate_json(dumped)
    assert again.messages == history
    assert Conversation.model_validate(model.model_dump()).messages == history


def test_single_message_and_part_fields() -> None:
    class Holder(pydantic.BaseModel):
        message: ModelRequest
        part: TextPart

    holder = Holder(message=ModelRequest(parts=[UserPromptPart('hi')]), part=TextPart('yo'))
    assert Holder.model_validate_json(holder.model_dump_json()) == holder


def test_bad_message_in_a_user_model_names_the_field() -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        Conversation.model_validate(
            {'title': 't', 'messages': [{'kind': 'request', 'parts': [{'part_kind': 'tool-return'}]}]}
        )
    assert 'parts[0].tool_name: field required' in str(info.value)
