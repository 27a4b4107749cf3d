"""The UI loaders' input check: the bulk fast path decides exactly as the value-by-value walk.

`checked_input` first checks a client's messages in bulk (one C encode, a walk over containers);
only an input that may break a rule is walked value by value to name where. These tests hold the
two to the same verdict and the same error, over generated inputs near the limits.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from threadline.ui._input import MAX_DEPTH, _walk, checked_input

_TEXT = st.text(alphabet=st.sampled_from(['a', 'é', '\ud800', '\udfff', '😀', ' ']), max_size=4)
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), _TEXT)


def _nested(depth: int, leaf: object) -> object:
    value = leaf
    for k in range(depth):
        value = [value] if k % 2 else {'k': value}
    return value


def _verdict(check: object, raw: object) -> str | None:
    try:
        check(raw, 'messages')  # type: ignore[operator]
    except ValidationError as error:
        return str(error)
    return None


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3)),
    st.integers(min_value=MAX_DEPTH - 3, max_value=MAX_DEPTH + 2),
    _SCALARS | st.just([]) | st.just({}),
)
def test_the_fast_check_decides_as_the_walk(value: object, depth: int, leaf: object) -> None:
    for raw in (value, [value, _nested(depth, leaf)]):
        assert _verdict(checked_input, raw) == _verdict(_walk, raw)


@pytest.mark.parametrize(
    ('raw', 'expected'),
    [
        ([{'parts': [{'text': 'fine'}]}], None),
        ([{'parts': [{'text': 'x\ud800'}]}], 'lone surrogate'),
        ([{'\udc00': 1}], 'lone surrogate'),
        ([_nested(MAX_DEPTH - 1, 'text at the limit')], None),
        ([_nested(MAX_DEPTH, 1)], 'nests deeper'),
        ([_nested(MAX_DEPTH + 50, [])], 'nests deeper'),
    ],
)
def test_bad_input_is_refused_where_it_is(raw: object, expected: str | None) -> None:
    verdict = _verdict(checked_input, raw)
    assert (verdict is None) if expected is None else (verdict is not None and expected in verdict)
