"""Applying a stream delta to its part (`TextPartDelta.apply`, `ThinkingPartDelta.apply`,
`ToolCallPartDelta.apply` / `as_part`), as a custom model's stream does, compared with
pydantic-ai 2.62: the same deltas applied in turn on both libraries give the same parts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip('pydantic_ai')


def _m(lib: str) -> Any:
    if lib == 'ref':
        from pydantic_ai import messages
    else:
        from threadline import messages  # type: ignore[no-redef]
    return messages


def _seen(value: Any) -> Any:
    """A part or delta as plain data (a call's generated id left out)."""
    if value is None or isinstance(value, str):
        return value
    fields = ('content', 'signature', 'tool_name', 'args', 'provider_name', 'provider_details', 'citations')
    fields += ('content_delta', 'signature_delta', 'tool_name_delta', 'args_delta', 'tool_call_id')
    seen = {f: getattr(value, f) for f in fields if hasattr(value, f)}
    if isinstance(seen.get('tool_call_id'), str) and seen['tool_call_id'].startswith('pyd_ai'):
        seen['tool_call_id'] = 'generated'
    return type(value).__name__, seen


def _outcome(apply: Any) -> Any:
    try:
        return _seen(apply())
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return type(error).__name__


def _text_and_thinking(lib: str, chunks: list[tuple[str, str | None, dict[str, Any] | None]]) -> list[Any]:
    m = _m(lib)
    text: Any = m.TextPart('')
    thinking: Any = m.ThinkingPart('')
    pending: Any = m.ThinkingPartDelta(content_delta='')
    out = []
    for content, signature, details in chunks:
        text = m.TextPartDelta(content, provider_name='p' if details else None, provider_details=details).apply(text)
        delta = m.ThinkingPartDelta(content_delta=content, signature_delta=signature, provider_details=details)
        thinking = delta.apply(thinking)
        pending = delta.apply(pending)
        out.append((_seen(text), _seen(thinking), _seen(pending)))
    out.append(_outcome(lambda: m.TextPartDelta('x').apply(m.ThinkingPart('t'))))
    out.append(_outcome(lambda: m.ThinkingPartDelta().apply(m.ThinkingPartDelta(content_delta='a'))))
    return out


chunk = st.tuples(
    st.text(max_size=5),
    st.one_of(st.none(), st.text(max_size=4)),
    st.one_of(st.none(), st.dictionaries(st.sampled_from(['a', 'b']), st.integers(0, 3), max_size=2)),
)


@settings(max_examples=60, deadline=None)
@given(chunks=st.lists(chunk, max_size=5))
def test_text_and_thinking_deltas_apply_the_same(chunks: list[Any]) -> None:
    assert _text_and_thinking('ours', chunks) == _text_and_thinking('ref', chunks)


TOOL_DELTAS = [
    [('get_', '{"ci', 'c1'), ('weather', 'ty": "Paris"}', None)],
    [(None, '{"a": 1', None), ('lookup', '}', 'c2')],  # the name comes last: a delta until then
    [('t', {'a': 1}, None), (None, {'b': 2}, None)],  # dict arguments merge
    [('t', '{"a"', None), (None, {'b': 2}, None)],  # JSON text, then a dict: a provider bug
    [('t', {'a': 1}, None), (None, ': 1}', None)],
    [(None, None, 'c3')],
]


def _tool_calls(lib: str, deltas: list[tuple[Any, Any, Any]]) -> list[Any]:
    m = _m(lib)
    made = [m.ToolCallPartDelta(tool_name_delta=n, args_delta=a, tool_call_id=i) for n, a, i in deltas]
    out: list[Any] = [_seen(d.as_part()) for d in made]
    state: Any = made[0]
    for delta in made[1:]:
        state_before = state
        out.append(_outcome(lambda d=delta, s=state_before: d.apply(s)))
        try:
            state = delta.apply(state)
        except Exception:  # noqa: BLE001 - compared above
            break
    part = m.ToolCallPart('base', None, 'c0')
    for delta in made:
        out.append(_outcome(lambda d=delta, p=part: d.apply(p)))
    out.append(_outcome(lambda: made[0].apply(m.TextPart('no'))))
    return out


@pytest.mark.parametrize('deltas', TOOL_DELTAS, ids=lambda d: str(d)[:40])
def test_tool_call_deltas_apply_the_same(deltas: list[tuple[Any, Any, Any]]) -> None:
    assert _tool_calls('ours', deltas) == _tool_calls('ref', deltas)
