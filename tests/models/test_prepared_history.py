"""`PreparedHistory`: the history a run sends, prepared request by request, always equals the full
pass (`render_history(repair_messages(h), profile)`) whatever happened to the history between
requests; and a run over a long history reuses what the previous request prepared."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._hypothesis import examples
from threadline import Agent, ModelMessagesTypeAdapter
from threadline.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    OpaquePart,
    RetryFeedbackPart,
    RetryInfo,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    repair_messages,
)
from threadline.models import ModelProfile, PreparedHistory, render_history
from threadline.models.function import AgentInfo, FunctionModel

PROFILES = (ModelProfile(supports_inline_system_prompts=True), ModelProfile(supports_inline_system_prompts=False))
extra_parts = st.sampled_from(
    [
        lambda: UserPromptPart('more'),
        lambda: SystemPromptPart('mid-conversation'),
        lambda: RetryFeedbackPart('fix it', retry=RetryInfo('model_retry')),
        lambda: RetryPromptPart('again'),
        lambda: CompactionPart('summary'),
        lambda: OpaquePart({'part_kind': 'x-newer-kind', 'v': 1}),
    ]
)


@st.composite
def conversations(draw: st.DrawFn) -> list[ModelMessage]:
    """A valid conversation: every call answered in the next request, with the parts rendering
    changes (system prompts, feedback, compaction, kinds from a newer writer) mixed in."""
    first: list[Any] = [SystemPromptPart('standing')] if draw(st.booleans()) else []
    messages: list[ModelMessage] = [ModelRequest([*first, UserPromptPart('hi')])]
    counter = 0
    for _ in range(draw(st.integers(0, 10))):
        ids = [f'c{counter + j}' for j in range(draw(st.integers(0, 2)))]
        counter += len(ids)
        response_parts: list[Any] = [TextPart('t'), *(ToolCallPart('f', {}, i) for i in ids)]
        if draw(st.booleans()):
            response_parts.append(OpaquePart({'part_kind': 'x-newer-response-part'}))
        messages.append(ModelResponse(response_parts))
        parts: list[Any] = [ToolReturnPart('f', 'ok', i) for i in ids]
        parts += [make() for make in draw(st.lists(extra_parts, max_size=2))]
        messages.append(ModelRequest(parts or [UserPromptPart('next')]))
    return messages


def full_pass(history: list[ModelMessage], profile: ModelProfile) -> Any:
    return sent(render_history(repair_messages(history), profile))


def sent(result: tuple[list[ModelMessage], set[str]]) -> Any:
    """What a model is sent, without the timestamps rendering stamps on the parts it builds."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != 'timestamp'}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    messages, skipped = result
    return strip(ModelMessagesTypeAdapter.dump_python(messages, mode='json')), skipped


def variant(message: ModelMessage, drop_calls: bool) -> list[Any]:
    """Other parts for `message`: rendered differently, and (`drop_calls`) pairing differently."""
    paired = (ToolReturnPart, ToolCallPart)
    kept = [p for p in message.parts if isinstance(p, paired) and not drop_calls]
    if isinstance(message, ModelRequest):
        return [*kept, CompactionPart('another summary')]
    return [TextPart('other words'), *kept]


def apply(op: str, history: list[ModelMessage], data: st.DataObject) -> None:
    """Change the history between two requests, as a processor, hook or tool might."""
    if not history:
        return
    index = data.draw(st.integers(0, len(history) - 1))
    message = history[index]
    if op == 'copy':  # an equal copy: still counts as prepared
        history[index] = dataclasses.replace(message, parts=[*message.parts])
    elif op == 'replace':  # another message in its place
        history[index] = dataclasses.replace(message, parts=variant(message, data.draw(st.booleans())))
    elif op == 'reassign':  # a new parts list on the same object
        message.parts = variant(message, data.draw(st.booleans()))
    elif op == 'truncate':
        del history[index:]
    elif op == 'drop':  # removing a message breaks pairing or alternation: the repair path
        del history[index]
    elif op == 'duplicate':
        history.insert(index, message)


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.data())
def test_each_request_sends_what_the_full_pass_would(conversation: list[ModelMessage], data: st.DataObject) -> None:
    prepared = PreparedHistory()
    history: list[ModelMessage] = []
    for _ in range(data.draw(st.integers(1, 12))):
        grow = data.draw(st.integers(0, 3))
        history.extend(conversation[len(history) : len(history) + grow] if len(history) <= len(conversation) else [])
        op = data.draw(st.sampled_from(['none', 'copy', 'replace', 'reassign', 'truncate', 'drop', 'duplicate']))
        apply(op, history, data)
        profile = data.draw(st.sampled_from(PROFILES))
        if data.draw(st.booleans()):
            profile = dataclasses.replace(profile)  # an equal profile, another object
        for repair_last in (False, True):
            needs = prepared.needs_repair(history, repair_last_response=repair_last)
            assert needs or repair_messages(history, repair_last_response=repair_last) == history
        assert sent(prepared.prepare(history, profile)) == full_pass(history, profile)
        copy = prepared.copy()
        assert sent(copy.prepare(list(history), profile)) == full_pass(history, profile)


def test_a_long_run_prepares_each_message_once() -> None:
    """A 40-step tool loop over a 2,000-message history: after the first request, each request
    checks and renders only the messages added since the one before (counted by the renderer)."""
    import threadline.models._prepared as module

    rendered: list[int] = []
    real = module.render_into

    def counting(out: list[Any], messages: Any, *args: Any, **kwargs: Any) -> bool:
        rendered.append(len(messages))
        return real(out, messages, *args, **kwargs)

    history: list[ModelMessage] = [ModelRequest([UserPromptPart('start')])]
    for i in range(1_000):
        history += [
            ModelResponse([ToolCallPart('f', {}, f'old{i}')]),
            ModelRequest([ToolReturnPart('f', 1, f'old{i}')]),
        ]
    history.append(ModelResponse([TextPart('so far')]))

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        steps = sum(isinstance(m, ModelResponse) for m in messages) - 1_001
        if steps < 40:
            return ModelResponse([ToolCallPart('step', {}, f'new{steps}')])
        return ModelResponse([TextPart('done')])

    agent = Agent(FunctionModel(respond))

    @agent.tool_plain
    def step() -> int:
        return 1

    module.render_into = counting  # type: ignore[assignment]
    try:
        result = agent.run_sync('go', message_history=history)
        again = agent.run_sync('and again', message_history=result.all_messages())
    finally:
        module.render_into = real  # type: ignore[assignment]
    assert again.output == 'done'
    # The first run renders the given history once, then only the new messages of each request;
    # the second run, continuing the first, starts from what the agent kept at the first's start,
    # so it renders the first run's messages and its own, once each.
    first_run = 1 + 40 * 2 + 1  # its prompt, a response and a request per step, the answer
    assert rendered[0] == len(history)
    assert rendered[1:] == [1] + [2] * 40 + [first_run, 1], rendered


def test_another_profile_renders_the_history_again() -> None:
    history: list[ModelMessage] = [
        ModelRequest([UserPromptPart('hi')]),
        ModelResponse([TextPart('hello')]),
        ModelRequest([SystemPromptPart('from now on, be brief'), UserPromptPart('and?')]),
    ]
    prepared = PreparedHistory()
    inline, tagged = PROFILES
    for profile in (inline, tagged, inline):
        assert sent(prepared.prepare(history, profile)) == full_pass(history, profile)
    assert full_pass(history, inline) != full_pass(history, tagged)
