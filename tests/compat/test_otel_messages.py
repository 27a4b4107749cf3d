"""Our GenAI-convention messages against pydantic-ai 2.62's, part for part, over random histories
built from its own classes (loaded into ours through the shared wire JSON), with and without content."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from pydantic_ai import messages as ref
from pydantic_ai.models.instrumented import InstrumentationSettings

from tests._hypothesis import examples
from tests.compat._reference_strategies import reference_histories
from threadline.capabilities._otel_messages import otel_messages
from threadline.messages import ModelMessagesTypeAdapter


def theirs(history: list[Any], include_content: bool) -> Any:
    converted = InstrumentationSettings(include_content=include_content).messages_to_otel_messages(history)
    return json.loads(json.dumps(converted, default=str))


def ours(history: list[Any], include_content: bool) -> Any:
    loaded = ModelMessagesTypeAdapter.validate_json(ref.ModelMessagesTypeAdapter.dump_json(history))
    return json.loads(json.dumps(otel_messages(loaded, include_content=include_content), default=str))


@pytest.mark.parametrize('include_content', [True, False])
@settings(max_examples=examples(300), deadline=None)
@given(history=reference_histories)
def test_random_histories_convert_as_the_reference_converts_them(history: list[Any], include_content: bool) -> None:
    assert ours(history, include_content) == theirs(history, include_content)
