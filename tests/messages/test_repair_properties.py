"""Repair invariants over thousands of generated histories, and the reports it shares with the audit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples
from threadline.messages import (
    ImageUrl,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    RetryFeedbackPart,
    RetryInfo,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    pairing_report,
    repair_messages,
    repair_report,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)
ids = st.sampled_from(['c1', 'c2', 'c3', 'c4'])
stamps = st.integers(0, 100).map(lambda s: T0 + timedelta(seconds=s))
metadata = st.none() | st.fixed_dictionaries({'k': st.integers()})
user = st.builds(UserPromptPart, st.text(max_size=5) | st.just(['look', ImageUrl('https://x/a.png')]), timestamp=stamps)
result = st.builds(
    ToolReturnPart,
    st.just('t'),
    st.text(max_size=5),
    ids,
    metadata=metadata,
    timestamp=stamps,
    outcome=st.sampled_from(['success', 'failed', 'retried']),
)
feedback = st.builds(RetryFeedbackPart, st.just('fix it'), retry=st.just(RetryInfo('model_retry')), timestamp=stamps)
call = st.builds(ToolCallPart, st.just('t'), st.just({'a': 1}) | st.just('{"a": 1, "b'), ids)
native = st.builds(NativeToolCallPart, st.just('web'), st.just({}), st.just('n1'))
requests = st.builds(
    ModelRequest,
    st.lists(st.one_of(user, result, feedback), max_size=4),
    timestamp=st.none() | stamps,
    instructions=st.none() | st.sampled_from(['A', 'B']),
    run_id=st.none() | st.just('r1'),
    metadata=metadata,
    state=st.sampled_from(['complete', 'interrupted']),
)
responses = st.builds(
    ModelResponse,
    st.lists(st.one_of(st.builds(TextPart, st.text(max_size=5)), call, native), max_size=3),
    timestamp=stamps,
    model_name=st.none() | st.just('m'),
    state=st.sampled_from(['complete', 'interrupted']),
)
histories = st.lists(requests | responses, max_size=8)


def texts(messages: list[Any]) -> list[Any]:
    out = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, (UserPromptPart, TextPart, RetryFeedbackPart)):
                out.append(part)
    return out


@settings(max_examples=examples(3000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories, st.booleans())
def test_repair_invariants(history: list[Any], repair_last: bool) -> None:
    repaired = repair_messages(history, repair_last_response=repair_last)
    assert repair_messages(repaired, repair_last_response=repair_last) == repaired  # idempotent
    report = pairing_report(repaired)
    assert not report.orphaned_results  # no result precedes or lacks its call
    last_response = max((i for i, m in enumerate(repaired) if isinstance(m, ModelResponse)), default=-1)
    for ref in report.open_calls:  # every call answered, except the live frontier when asked to keep it
        assert not repair_last and ref.message_index == last_response
    assert texts(repaired) == texts(history)  # no text or user content lost, order kept
    answered = {ref.tool_call_id for ref in pairing_report(history).duplicate_results}
    kept_results = [p for m in repaired for p in m.parts if isinstance(p, ToolReturnPart)]
    for original in [p for m in history for p in m.parts if isinstance(p, ToolReturnPart)]:
        if original.tool_call_id in answered or original in kept_results:
            continue
        assert original not in kept_results  # only orphans disappear
    for message in repaired:
        if isinstance(message, ModelRequest):
            synthesized = [
                p
                for p in message.parts
                if isinstance(p, ToolReturnPart)
                and p.outcome == 'interrupted'
                and isinstance(p.metadata, dict)
                and p.metadata.get('pydantic_ai_synthesized_tool_return')
            ]
            assert all(p.timestamp is not None for p in synthesized)


def test_repair_report_names_each_change() -> None:
    history = [
        ModelRequest(parts=[UserPromptPart('q', timestamp=T0), ToolReturnPart('t', 'x', 'early', timestamp=T0)]),
        ModelResponse(parts=[ToolCallPart('t', {}, 'c1'), ToolCallPart('t', {}, 'c2')], timestamp=T0),
        ModelRequest(parts=[ToolReturnPart('t', 'ok', 'c1', timestamp=T0)]),
        ModelRequest(parts=[UserPromptPart('more', timestamp=T0)]),
    ]
    repaired, events = repair_report(history)
    assert [(e.kind, e.message_index, e.part_index, e.tool_call_id) for e in events] == [
        ('orphan_result_removed', 0, 1, 'early'),
        ('interrupted_return_synthesized', 1, 1, 'c2'),
        ('requests_merged', 3, None, None),
    ]
    assert [p.tool_call_id for p in repaired[2].parts if isinstance(p, ToolReturnPart)] == ['c1', 'c2']
    assert repaired == repair_messages(history)


def test_pairing_report_positions() -> None:
    history = [
        ModelResponse(parts=[ToolCallPart('t', {}, 'c1'), ToolCallPart('t', {}, 'c2')]),
        ModelRequest(
            parts=[ToolReturnPart('t', 'a', 'c1'), ToolReturnPart('t', 'b', 'c1'), ToolReturnPart('t', 'z', 'zz')]
        ),
    ]
    report = pairing_report(history)
    assert [(r.message_index, r.part_index, r.tool_call_id) for r in report.open_calls] == [(0, 1, 'c2')]
    assert [(r.message_index, r.part_index) for r in report.duplicate_results] == [(1, 1)]
    assert [(r.message_index, r.part_index) for r in report.orphaned_results] == [(1, 2)]
    synthesized = pairing_report(repair_messages(history)).synthesized_returns
    assert [(r.message_index, r.tool_call_id) for r in synthesized] == [(1, 'c2')]


def test_repair_accepts_odd_shapes_and_rejects_non_messages() -> None:
    assert repair_messages([]) == []
    starts_with_response = [ModelResponse(parts=[TextPart('hi')]), ModelRequest(parts=[])]
    assert repair_messages(starts_with_response) == starts_with_response
    with pytest.raises(TypeError, match=r'messages\[1\] is a dict'):
        repair_messages([ModelRequest(parts=[]), {'kind': 'request'}])  # type: ignore[list-item]
