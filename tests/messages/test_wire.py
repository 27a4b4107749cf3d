"""The wire vectors written by pydantic-ai load and dump back unchanged."""

from __future__ import annotations

import json

import pytest

from tests.conftest import VECTORS, vector_names
from threadline import ModelMessagesTypeAdapter, to_json, to_jsonable_python
from threadline.messages import (
    BinaryContent,
    FilePart,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextContent,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

WIRE = vector_names('wire')


def test_vectors_present() -> None:
    assert len(WIRE) >= 8


@pytest.mark.parametrize('name', WIRE)
def test_vector_round_trips_as_json(name: str) -> None:
    raw = (VECTORS / 'wire' / name).read_bytes()
    messages = ModelMessagesTypeAdapter.validate_json(raw)
    assert json.loads(ModelMessagesTypeAdapter.dump_json(messages)) == json.loads(raw)


@pytest.mark.parametrize('name', WIRE)
def test_vector_round_trips_through_python_modes(name: str) -> None:
    raw = (VECTORS / 'wire' / name).read_bytes()
    messages = ModelMessagesTypeAdapter.validate_json(raw)
    as_json = ModelMessagesTypeAdapter.dump_python(messages, mode='json')
    assert as_json == json.loads(raw)
    assert to_jsonable_python(messages) == as_json
    assert ModelMessagesTypeAdapter.validate_python(as_json) == messages
    assert ModelMessagesTypeAdapter.validate_python(ModelMessagesTypeAdapter.dump_python(messages)) == messages
    assert ModelMessagesTypeAdapter.validate_json(to_json(messages)) == messages


def test_vector_types_are_what_the_documents_use() -> None:
    joke = ModelMessagesTypeAdapter.validate_json((VECTORS / 'wire' / '01_joke_two_turns.json').read_bytes())
    assert [type(m) for m in joke] == [ModelRequest, ModelResponse, ModelRequest, ModelResponse]
    assert joke[0].parts == [UserPromptPart('Tell me a joke.', timestamp=joke[0].parts[0].timestamp)]
    assert joke[1].usage.input_tokens == 55 and joke[1].usage.output_tokens == 12

    retry = ModelMessagesTypeAdapter.validate_json((VECTORS / 'wire' / '04_retry_and_string_args.json').read_bytes())
    call = retry[1].parts[0]
    assert isinstance(call, ToolCallPart) and call.args == '{"a": 1}' and call.args_as_dict() == {'a': 1}
    assert isinstance(retry[2].parts[0], RetryPromptPart)  # kept as the documents describe it
    assert retry[4].parts[0].content == 3

    multi = ModelMessagesTypeAdapter.validate_json((VECTORS / 'wire' / '03_multimodal_user_content.json').read_bytes())
    content = multi[0].parts[0].content
    assert isinstance(content[1], TextContent) and content[1].metadata == {'origin': 'app', 'tags': ['a', 'b']}
    binary = content[6]
    assert isinstance(binary, BinaryContent) and binary.data == b'\x89PNG fake'

    files = ModelMessagesTypeAdapter.validate_json(
        (VECTORS / 'wire' / '05_file_part_and_tool_failure.json').read_bytes()
    )
    assert isinstance(files[1].parts[0], FilePart) and files[1].parts[0].content.data == b'img-bytes'
    failed = files[2].parts[0]
    assert isinstance(failed, ToolReturnPart) and failed.outcome == 'failed'


def test_dump_json_indent() -> None:
    messages = [ModelRequest(parts=[UserPromptPart('hi')])]
    indented = ModelMessagesTypeAdapter.dump_json(messages, indent=2)
    assert b'\n  ' in indented
    assert ModelMessagesTypeAdapter.validate_json(indented) == messages
