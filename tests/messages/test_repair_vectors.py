"""Every repair and sanitize vector produced by pydantic-ai is reproduced."""

from __future__ import annotations

import json
import warnings

import pytest

from tests.conftest import load_vector, vector_names
from threadline import ModelMessagesTypeAdapter as TA
from threadline.messages import repair_messages, sanitize_messages


def as_json(messages: list) -> list:
    return json.loads(TA.dump_json(messages))


# retry_prompt_orphan.json: pydantic-ai converts the loaded `retry-prompt` into a retried tool
# return before repairing; Threadline keeps RetryPromptPart (vectors/README.md), and a legacy
# RetryPromptPart naming a tool counts as a tool result, so the outcome is the same.
@pytest.mark.parametrize('name', vector_names('repair'))
def test_repair_vector(name: str) -> None:
    vector = load_vector('repair', name)
    history = TA.validate_python(vector['input'])
    repaired = repair_messages(history)
    assert as_json(repaired) == vector['repaired']
    assert as_json(repair_messages(history, repair_last_response=False)) == vector['repaired_keep_last_response']
    assert repair_messages(repaired) == repaired
    assert as_json(history) == vector['input']  # pure: the input is not touched


@pytest.mark.parametrize('name', vector_names('sanitize'))
def test_sanitize_vector(name: str) -> None:
    vector = load_vector('sanitize', name)
    history = TA.validate_python(vector['input'])
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        sanitized = sanitize_messages(history, **vector['options'])
    assert as_json(sanitized) == vector['expected']
    assert as_json(history) == vector['input']
