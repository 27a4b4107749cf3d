"""Histories cross between pydantic-ai 2.62 (the reference, a test-only dependency) and Threadline."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from pydantic_ai import ModelMessagesTypeAdapter as ReferenceTA

from tests._hypothesis import examples
from tests.compat._reference_strategies import reference_histories
from tests.conftest import VECTORS, vector_names
from tests.data import histories
from threadline import ModelMessagesTypeAdapter as OurTA

# The reference rewrites a loaded `retry-prompt` into its newer parts (vectors/README.md).
REWRITTEN_BY_REFERENCE = {'04_retry_and_string_args.json'}


def as_json(data: bytes) -> Any:
    return json.loads(data)


@pytest.mark.parametrize('name', vector_names('wire'))
def test_our_dump_of_each_vector_loads_in_the_reference(name: str) -> None:
    raw = (VECTORS / 'wire' / name).read_bytes()
    ours = OurTA.dump_json(OurTA.validate_json(raw))
    theirs = ReferenceTA.validate_json(ours)
    if name in REWRITTEN_BY_REFERENCE:
        assert theirs == ReferenceTA.validate_json(raw)
    else:
        assert as_json(ReferenceTA.dump_json(theirs)) == as_json(raw)


@pytest.mark.parametrize('size', [40, 1000])
def test_realistic_histories_cross_both_ways(size: int) -> None:
    raw = json.dumps(histories.history(size, seed=size)).encode()
    reference_messages = ReferenceTA.validate_json(raw)
    ours = OurTA.validate_json(ReferenceTA.dump_json(reference_messages))
    assert as_json(OurTA.dump_json(ours)) == as_json(ReferenceTA.dump_json(reference_messages))
    assert ReferenceTA.validate_json(OurTA.dump_json(ours)) == reference_messages
    assert ReferenceTA.validate_python(OurTA.dump_python(ours, mode='json')) == reference_messages


@settings(
    max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(reference_histories)
def test_random_reference_histories_round_trip_through_threadline(history: list[Any]) -> None:
    written = ReferenceTA.dump_json(history)
    ours = OurTA.validate_json(written)
    rewritten = OurTA.dump_json(ours)
    assert as_json(rewritten) == as_json(written)
    assert as_json(ReferenceTA.dump_json(ReferenceTA.validate_json(rewritten))) == as_json(written)
    assert OurTA.validate_python(OurTA.dump_python(ours)) == ours
