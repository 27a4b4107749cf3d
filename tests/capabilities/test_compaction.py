"""Compaction processors keep a history valid: tool pairs, the standing prompt, repair's form."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples
from tests.messages.test_repair_properties import histories
from threadline import Agent
from threadline.capabilities import ClearOldToolResults, KeepLastTurns, ProcessHistory, SummarizeOlderTurns
from threadline.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    pairing_report,
    repair_messages,
)
from threadline.models.function import AgentInfo, FunctionModel
from threadline.models.test import TestModel


def _valid(history: list[Any], system: bool) -> list[ModelMessage]:
    """A repaired history that opens with a standing prompt (maybe) and ends with a new request."""
    messages = repair_messages([*history, ModelRequest(parts=[UserPromptPart('now')])])
    first = messages[0]
    if system and isinstance(first, ModelRequest):
        messages[0] = ModelRequest(parts=[SystemPromptPart('STANDING'), *first.parts], timestamp=first.timestamp)
        messages = repair_messages(messages)
    return messages


PROCESSORS = [KeepLastTurns(1), KeepLastTurns(2), ClearOldToolResults(1), ClearOldToolResults(2)]


@settings(max_examples=examples(1500), deadline=None)
@given(histories, st.booleans(), st.sampled_from(PROCESSORS))
def test_processors_keep_a_history_valid(history: list[Any], system: bool, processor: Any) -> None:
    messages = _valid(history, system)
    out = processor(list(messages))
    assert repair_messages(out) == out  # already in repair's form: nothing for repair to change
    assert pairing_report(out).is_paired
    assert out[-1].parts[-len(messages[-1].parts) :] == messages[-1].parts  # the new request is kept
    if system and isinstance(messages[0], ModelRequest):
        assert isinstance(out[0], ModelRequest) and out[0].parts[0] == messages[0].parts[0]
    assert len(out) <= len(messages)


def test_keep_last_turns_drops_whole_turns_and_keeps_the_prompt() -> None:
    messages: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart('S'), UserPromptPart('q1')]),
        ModelResponse(parts=[ToolCallPart('t', {}, 'c1')]),
        ModelRequest(parts=[ToolReturnPart('t', 'r1', 'c1')]),
        ModelResponse(parts=[TextPart('a1')]),
        ModelRequest(parts=[UserPromptPart('q2')]),
        ModelResponse(parts=[TextPart('a2')]),
        ModelRequest(parts=[UserPromptPart('q3')]),
    ]
    assert KeepLastTurns(2)(messages) == [
        replace(messages[4], parts=[messages[0].parts[0], *messages[4].parts]),
        messages[5],
        messages[6],
    ]
    assert KeepLastTurns(5)(messages) == messages
    cleared = ClearOldToolResults(1)(messages)
    assert cleared[2].parts[0].content == '[tool result cleared to save context]'  # type: ignore[union-attr]
    assert cleared[1] == messages[1] and cleared[4:] == messages[4:]


async def test_a_summary_replaces_older_turns_and_reaches_the_model_as_user_context() -> None:
    seen: list[list[ModelMessage]] = []

    def main(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart('ok')])

    summarizer = TestModel(custom_output_text='the user asked about refunds for order 42')
    agent = Agent(
        FunctionModel(main),
        system_prompt='S',
        capabilities=[ProcessHistory(SummarizeOlderTurns(summarizer, keep_turns=1))],
    )
    first = await agent.run('refund order 42?')
    second = await agent.run('and order 43?', message_history=first.all_messages())
    third = await agent.run('thanks', message_history=second.all_messages())
    kept = third.all_messages()
    assert isinstance(kept[0], ModelRequest)
    assert [type(p) for p in kept[0].parts][:2] == [SystemPromptPart, CompactionPart]
    assert kept[0].parts[1].content == 'the user asked about refunds for order 42'  # type: ignore[union-attr]
    # what the model saw: the summary as framed user text, after the standing prompt
    sent = seen[-1][0]
    assert isinstance(sent, ModelRequest) and isinstance(sent.parts[1], UserPromptPart)
    text = sent.parts[1].content
    assert isinstance(text, str) and text.startswith('<conversation_summary>\nThe following is a summary')
    assert 'order 42' in text and text.endswith('</conversation_summary>')
    assert repair_messages(kept) == kept


def test_no_cut_between_a_call_and_a_result_that_comes_after_another_prompt() -> None:
    # found by the property test: a user prompt can sit between a call and its result, and a cut
    # there would orphan the result
    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart('q1')]),
        ModelResponse(parts=[ToolCallPart('t', {}, 'c1')]),
        ModelRequest(parts=[UserPromptPart('meanwhile')], instructions='A'),
        ModelRequest(parts=[ToolReturnPart('t', 'r', 'c1'), UserPromptPart('now')], instructions='B'),
    ]
    out = KeepLastTurns(1)(messages)
    assert out == messages and pairing_report(out).is_paired


def test_a_call_answered_twice_keeps_its_turn_whole() -> None:
    """Repair keeps a duplicate result; cutting after the call but before its last answer would
    leave that answer orphaned (found by the property above)."""
    call = ModelResponse(parts=[ToolCallPart('t', {}, 'c2')])
    history = [
        ModelRequest(parts=[UserPromptPart('first')]),
        call,
        ModelRequest(parts=[ToolReturnPart('t', 'one', 'c2')]),
        ModelRequest(parts=[UserPromptPart('second')]),
        ModelRequest(parts=[ToolReturnPart('t', 'again', 'c2'), UserPromptPart('now')]),
    ]
    out = KeepLastTurns(1)(list(history))
    assert pairing_report(out).orphaned_results == ()
    assert call in out and out[-1] == history[-1]
