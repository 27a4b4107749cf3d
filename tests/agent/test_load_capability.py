"""Deferred capabilities loaded with `load_capability`: the same scripted runs through Threadline and
pydantic-ai 2.62 offer the same tools at every request and store the same load records; a replayed
history reproduces the tool set; processors keep a load's call, result and delta together."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pydantic_ai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai import capabilities as ref_capabilities
from pydantic_ai import messages as ref_messages
from pydantic_ai import toolsets as ref_toolsets
from pydantic_ai.models.function import FunctionModel as RefFunctionModel

import threadline
from tests._hypothesis import examples
from tests.messages.test_repair_properties import histories
from threadline import capabilities as our_capabilities
from threadline import messages as our_messages
from threadline import toolsets as our_toolsets
from threadline.agent.tools._load import loaded_capabilities
from threadline.capabilities import ClearOldToolResults, KeepLastTurns, ProcessHistory, SummarizeOlderTurns
from threadline.exceptions import UserError
from threadline.messages import (
    ModelMessage,
    ModelRequest,
    ToolAvailabilityDeltaPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    repair_messages,
)
from threadline.models.function import FunctionModel
from threadline.models.test import TestModel

LIBS = {
    'threadline': (threadline, our_messages, our_capabilities, our_toolsets, FunctionModel),
    'reference': (pydantic_ai, ref_messages, ref_capabilities, ref_toolsets, RefFunctionModel),
}
# The reference also stores the catalog and a loaded capability's instructions as instruction
# parts; Threadline sends the same text as instructions and stores no extra part.
INSTRUCTION_PARTS = {'instruction-baseline', 'instruction-delta'}


def billing(lib: str, hooks: list[str] | None = None) -> Any:
    """A deferred capability with one tool and instructions, built from `lib`'s classes."""
    _, _, caps, toolsets, _ = LIBS[lib]
    ts = toolsets.FunctionToolset()

    @ts.tool_plain
    def refund(order: str) -> str:
        return f'refunded {order}'

    @dataclass
    class Billing(caps.AbstractCapability):  # type: ignore[name-defined,misc]
        id: str = 'billing'
        description: str = 'Refunds and invoices'
        defer_loading: bool = True

        def get_toolset(self) -> Any:
            return ts

        def get_instructions(self) -> Any:
            return 'Always confirm the order number.'

        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            if hooks is not None:
                hooks.append('billing')
            return request_context

    return Billing()


def scripted(
    lib: str, script: list[Any], history: list[Any] | None = None, extra: list[Any] | None = None
) -> tuple[list[Any], Any]:
    """Run `script` (a list of responses' calls, None for a text answer) and return the tools
    offered at each request and the run's result."""
    mod, msgs, _, _, model_cls = LIBS[lib]
    offered: list[list[str]] = []
    steps = iter(script)

    def model(messages: list[Any], info: Any) -> Any:
        offered.append(sorted(t.name for t in info.function_tools))
        step = next(steps, None)
        if step is None:
            return msgs.ModelResponse(parts=[msgs.TextPart('done')])
        return msgs.ModelResponse(parts=[msgs.ToolCallPart(name, args, cid) for name, args, cid in step])

    agent = mod.Agent(model_cls(model), capabilities=[billing(lib), *(extra or [])])
    agent.tool_plain(lambda: 'p', name='plain')
    return offered, agent.run_sync('go', message_history=history)


def records(history: list[Any]) -> list[list[tuple[Any, ...]]]:
    """What a history says about tools: each part's kind, tool, call id, tool kind, outcome and
    content (timestamps and ids of the run left out)."""
    out = []
    for message in history:
        parts = []
        for p in message.parts:
            if p.part_kind in INSTRUCTION_PARTS:
                continue
            content = getattr(p, 'tools_added', None) or getattr(p, 'content', None)
            parts.append((p.part_kind, getattr(p, 'tool_name', None), getattr(p, 'tool_call_id', None),
                          getattr(p, 'tool_kind', None), getattr(p, 'outcome', None), content))  # fmt: skip
        if parts:
            out.append(parts)
    return out


LOAD = ('load_capability', {'id': 'billing'})
SCRIPT = [
    [(*LOAD, 'c1')],
    [('refund', {'order': 'A1'}, 'c2')],
    [(*LOAD, 'c3'), ('load_capability', {'id': 'nope'}, 'c4')],  # already active; unknown id
    None,
]


def test_a_load_reveals_the_capability_and_stores_the_same_records_as_pydantic_ai() -> None:
    ours, ref = scripted('threadline', SCRIPT), scripted('reference', SCRIPT)
    assert (
        ours[0]
        == ref[0]
        == [
            ['load_capability', 'plain'],
            ['load_capability', 'plain', 'refund'],
            ['load_capability', 'plain', 'refund'],
            ['load_capability', 'plain', 'refund'],
        ]
    )
    assert records(ours[1].all_messages()) == records(ref[1].all_messages())
    load_return = ours[1].all_messages()[2].parts
    assert [p.part_kind for p in load_return] == ['tool-return', 'tool-availability-delta']
    assert load_return[1].tools_added == ['refund'] and load_return[1].tool_call_id == 'c1'
    assert ours[1].output == 'done'


def test_two_loads_of_one_capability_in_one_response_load_it_once_as_in_pydantic_ai() -> None:
    script = [[(*LOAD, 'c1'), (*LOAD, 'c2')], None]
    ours, ref = scripted('threadline', script), scripted('reference', script)
    assert records(ours[1].all_messages()) == records(ref[1].all_messages())
    second = ours[1].all_messages()[2].parts[-1]
    assert second.outcome == 'retried' and 'already being loaded' in second.content


def test_the_loaded_capability_sends_its_instructions_only_after_the_load() -> None:
    seen: list[str | None] = []

    def model(messages: list[Any], info: Any) -> Any:
        seen.append(info.instructions)
        if len(seen) == 1:
            return our_messages.ModelResponse(parts=[our_messages.ToolCallPart(*LOAD, 'c1')])
        return our_messages.ModelResponse(parts=[our_messages.TextPart('ok')])

    threadline.Agent(FunctionModel(model), capabilities=[billing('threadline')]).run_sync('go')
    assert seen[0] is not None and '- billing: Refunds and invoices' in seen[0]
    assert 'Always confirm' not in seen[0]
    assert seen[1] is not None and seen[1].startswith(seen[0]) and seen[1].endswith('Always confirm the order number.')


def test_a_deferred_capabilitys_hooks_run_only_once_it_is_loaded() -> None:
    hooks: list[str] = []
    steps = iter([[our_messages.ToolCallPart(*LOAD, 'c1')], None])

    def model(messages: list[Any], info: Any) -> Any:
        hooks.append('request')
        step = next(steps)
        return our_messages.ModelResponse(parts=step or [our_messages.TextPart('ok')])

    threadline.Agent(FunctionModel(model), capabilities=[billing('threadline', hooks)]).run_sync('go')
    assert hooks == ['request', 'billing', 'request']


def variants(history: list[Any], msgs: Any) -> dict[str, list[Any]]:
    """A stored load, and the same history with the delta, or the load pair, taken out."""
    no_delta = copy.deepcopy(history)
    no_delta[2].parts = [p for p in no_delta[2].parts if p.part_kind != 'tool-availability-delta']
    delta_only = copy.deepcopy(history)
    delta_only[1].parts = [msgs.TextPart('x')]
    delta_only[2].parts = [p for p in delta_only[2].parts if p.part_kind != 'tool-return']
    return {'full': history, 'no delta': no_delta, 'delta only': delta_only}


@pytest.mark.filterwarnings('ignore:Skipped part or content kind')  # the reference's instruction parts
@pytest.mark.parametrize('writer', ['threadline', 'reference'])
def test_a_stored_load_offers_the_same_tools_on_replay_in_both_libraries(writer: str) -> None:
    """A history written by either library, with its delta or its load pair removed, offers the
    same tools to the next request in both: the pair is what loads, a delta alone does not."""
    _, stored = scripted(writer, [[(*LOAD, 'c1')], None])
    as_json = stored.all_messages_json()
    offered: dict[str, dict[str, list[str]]] = {}
    for lib in LIBS:
        msgs = LIBS[lib][1]
        adapter = msgs.ModelMessagesTypeAdapter
        history = adapter.validate_json(as_json)
        offered[lib] = {name: scripted(lib, [None], h)[0][0] for name, h in variants(history, msgs).items()}
    assert offered['threadline'] == offered['reference']
    assert offered['threadline'] == {
        'full': ['load_capability', 'plain', 'refund'],
        'no delta': ['load_capability', 'plain', 'refund'],
        'delta only': ['load_capability', 'plain'],
    }


def test_replaying_a_stored_history_reproduces_the_tools_of_every_step() -> None:
    script = [[(*LOAD, 'c1')], [('refund', {'order': 'A1'}, 'c2')], None]
    live, result = scripted('threadline', script)
    history = result.all_messages()
    requests = [i for i, m in enumerate(history) if isinstance(m, ModelRequest)]
    agent_tools = ['load_capability', 'plain', 'refund']
    replayed = []
    for end in requests:
        loaded = loaded_capabilities(history[: end + 1])
        replayed.append(sorted(n for n in agent_tools if n != 'refund' or 'billing' in loaded))
    assert replayed == live


def test_keep_last_turns_unloads_what_the_dropped_turn_loaded_and_the_model_may_load_again() -> None:
    _, first = scripted('threadline', [[(*LOAD, 'c1')], None])
    history = [*first.all_messages()]
    _, second = scripted('threadline', [None], history)  # a second turn, nothing loaded in it
    offered, third = scripted(
        'threadline',
        [[(*LOAD, 'c9')], None],
        second.all_messages(),
        extra=[ProcessHistory(KeepLastTurns(2))],
    )
    # The turn with the load was dropped before the first request: refund is hidden, and the
    # new load is accepted (not refused as already active).
    assert offered == [['load_capability', 'plain'], ['load_capability', 'plain', 'refund']]
    reload = [p for m in third.new_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    assert reload[0].outcome == 'success'


def test_clearing_old_tool_results_keeps_a_load_and_its_tools() -> None:
    _, first = scripted('threadline', [[(*LOAD, 'c1')], [('refund', {'order': 'A1'}, 'c2')], None])
    _, second = scripted('threadline', [None], first.all_messages())
    offered, third = scripted(
        'threadline', [None], second.all_messages(), extra=[ProcessHistory(ClearOldToolResults(1))]
    )
    assert offered == [['load_capability', 'plain', 'refund']]
    returns = {p.tool_name: p.content for m in third.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)}
    assert returns['refund'] == '[tool result cleared to save context]'
    assert returns['load_capability'] == {'message': "Capability 'billing' loaded. Its instructions, if any, follow."}


def test_a_summary_resets_what_the_summarized_turns_loaded() -> None:
    _, first = scripted('threadline', [[(*LOAD, 'c1')], None])
    _, second = scripted('threadline', [None], first.all_messages())
    summarize = SummarizeOlderTurns(TestModel(custom_output_text='they loaded billing'), keep_turns=1)
    offered, third = scripted('threadline', [None], second.all_messages(), extra=[ProcessHistory(summarize)])
    assert offered == [['load_capability', 'plain']]
    assert any(p.part_kind == 'compaction' for m in third.all_messages() for p in m.parts)


def test_a_deferred_capability_needs_a_unique_id_and_the_tool_name_is_reserved() -> None:
    @dataclass
    class NoId(our_capabilities.AbstractCapability[Any]):
        defer_loading: bool = True

    with pytest.raises(UserError, match='NoId has defer_loading=True but no id'):
        threadline.Agent(TestModel(), capabilities=[NoId()]).run_sync('go')
    with pytest.raises(UserError, match="share the id 'billing'"):
        threadline.Agent(TestModel(), capabilities=[billing('threadline'), billing('threadline')]).run_sync('go')
    agent = threadline.Agent(TestModel(), capabilities=[billing('threadline')])
    agent.tool_plain(lambda: 'x', name='load_capability')
    with pytest.raises(UserError, match="'load_capability' from deferred capability loading conflicts"):
        agent.run_sync('go')


# --- processors never split a load (property) ---------------------------------------------------


def with_loads(history: list[Any], picks: list[bool]) -> list[ModelMessage]:
    """`history` repaired, with some answered calls turned into load pairs (call, result, delta)."""
    messages = repair_messages([*history, ModelRequest(parts=[UserPromptPart('now')])])
    answered = {p.tool_call_id for m in messages if isinstance(m, ModelRequest) for p in m.parts
                if isinstance(p, ToolReturnPart)}  # fmt: skip
    chosen = {cid for cid, pick in zip(sorted(answered), picks, strict=False) if pick}
    out: list[ModelMessage] = []
    for message in messages:
        parts: list[Any] = []
        for p in message.parts:
            if isinstance(p, ToolCallPart) and p.tool_call_id in chosen:
                p = ToolCallPart('load_capability', {'id': f'cap-{p.tool_call_id}'}, p.tool_call_id,
                                 tool_kind='capability-load')  # fmt: skip
            elif isinstance(p, ToolReturnPart) and p.tool_call_id in chosen:
                parts.append(ToolReturnPart('load_capability', {'message': 'loaded'}, p.tool_call_id,
                                            tool_kind='capability-load'))  # fmt: skip
                p = ToolAvailabilityDeltaPart(tools_added=[f'tool-{p.tool_call_id}'], tool_call_id=p.tool_call_id)
            parts.append(p)
        out.append(copy.copy(message))
        out[-1].parts = parts
    return out


def load_records(messages: list[ModelMessage]) -> dict[str, set[str]]:
    """For each load id in `messages`: which of call, result and delta are present."""
    seen: dict[str, set[str]] = {}
    for message in messages:
        for p in message.parts:
            if isinstance(p, ToolCallPart) and p.tool_kind == 'capability-load':
                seen.setdefault(p.tool_call_id, set()).add('call')
            elif isinstance(p, ToolReturnPart) and p.tool_kind == 'capability-load':
                seen.setdefault(p.tool_call_id, set()).add('result')
            elif isinstance(p, ToolAvailabilityDeltaPart) and p.tool_call_id:
                seen.setdefault(p.tool_call_id, set()).add('delta')
    return seen


@settings(max_examples=examples(800), deadline=None)
@given(
    histories,
    st.lists(st.booleans(), min_size=4, max_size=4),
    st.sampled_from([KeepLastTurns(1), KeepLastTurns(2), ClearOldToolResults(1), ClearOldToolResults(2)]),
)
def test_processors_keep_a_loads_call_result_and_delta_together(
    history: list[Any], picks: list[bool], processor: Any
) -> None:
    messages = with_loads(history, picks)
    before = load_records(messages)
    out = processor(list(messages))
    after = load_records(out)
    assert all(kinds == {'call', 'result', 'delta'} for kinds in after.values())
    assert set(after) <= set(before)
    assert loaded_capabilities(out) <= loaded_capabilities(messages)
    if isinstance(processor, ClearOldToolResults):
        assert after == before and loaded_capabilities(out) == loaded_capabilities(messages)
