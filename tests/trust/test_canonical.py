"""Canonical bytes are computed once from each message, and are exactly the bytes the chain, the
seals and envelopes digested before: the wire JSON with sorted keys and no whitespace."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples
from tests.compat._histories import history
from tests.data.histories import history as workload_history
from threadline.messages import ModelMessagesTypeAdapter, ModelRequest, ModelResponse, TextPart, ToolCallPart
from threadline.messages.wire import canonical_bytes, canonical_json, encoder
from threadline.trust.sealing import GENESIS, extend_chain, extend_chain_messages

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


def as_before(message: Any) -> bytes:
    """What the chain digested before canonical bytes: wire JSON, decoded, sorted and encoded again."""
    return canonical_json(encoder.encode(message))


@settings(max_examples=examples(300))
@given(st.integers(0, 10_000), st.sampled_from(['openai', 'anthropic', 'google']))
def test_every_message_of_a_random_history_has_the_canonical_bytes_it_had(seed: int, provider: str) -> None:
    messages = ModelMessagesTypeAdapter.validate_python(history(seed, provider))
    for message in messages:
        assert canonical_bytes(message) == as_before(message)
    assert extend_chain_messages(GENESIS, messages) == extend_chain(GENESIS, [encoder.encode(m) for m in messages])


@settings(max_examples=examples(500))
@given(
    args=st.dictionaries(st.text(max_size=8), JSON, max_size=5), metadata=st.none() | st.dictionaries(st.text(), JSON)
)
def test_arbitrary_json_in_arguments_and_metadata_keeps_its_canonical_bytes(
    args: dict[str, Any], metadata: dict[str, Any] | None
) -> None:
    message = ModelResponse(parts=[ToolCallPart('lookup', args, 'call-1'), TextPart('ok')], metadata=metadata)
    assert canonical_bytes(message) == as_before(message)
    assert b' ' not in canonical_bytes(ModelResponse(parts=[ToolCallPart('t', {'b': 1, 'a': [1, 2]}, 'c')]))


def test_content_a_sorted_encoder_cannot_order_takes_the_wire_path() -> None:
    odd = ModelRequest.user_text_prompt('hi')
    odd.metadata = {'counts': {10: 'a', 9: 'b'}, 'price': Decimal('1.50')}
    assert canonical_bytes(odd) == as_before(odd)
    assert b'"counts":{"10":"a","9":"b"}' in canonical_bytes(odd)


def test_the_workload_history_chains_as_before() -> None:
    messages = ModelMessagesTypeAdapter.validate_python(workload_history(400))
    assert extend_chain_messages(GENESIS, messages) == extend_chain(GENESIS, [encoder.encode(m) for m in messages])
