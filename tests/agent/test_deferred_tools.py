"""Deferred tools revealed by `ToolReturn(tools=...)`, recorded as `ToolAvailabilityDeltaPart`:
the same runs through Threadline and pydantic-ai 2.62 offer the same tools at every request and
store the same parts; a replayed history reproduces the tool set; a processor that drops the
reveal hides the tool again."""

from __future__ import annotations

from typing import Any

import pydantic_ai
import pytest
from pydantic_ai import messages as ref_messages
from pydantic_ai.models.function import FunctionModel as RefFunctionModel

import threadline
from threadline import messages as our_messages
from threadline.capabilities import ClearOldToolResults, KeepLastTurns, ProcessHistory
from threadline.models.function import FunctionModel

SCRIPT = [
    [('reveal', 'c1'), ('plain', 'c2')],  # reveal 'hidden' (twice), an always-visible name and a typo
    [('hidden', 'c3')],
    [('reveal', 'c4')],  # revealing again adds nothing
    None,  # answer
]


def run_both(history_of: Any = None) -> dict[str, Any]:
    """The scripted run on each library: tools offered per request, and the stored parts."""
    out: dict[str, Any] = {}
    for name, lib, msgs, model_cls in (
        ('threadline', threadline, our_messages, FunctionModel),
        ('reference', pydantic_ai, ref_messages, RefFunctionModel),
    ):
        offered: list[list[str]] = []
        steps = iter(SCRIPT)

        def model(
            messages: list[Any], info: Any, msgs: Any = msgs, offered: list[list[str]] = offered, steps: Any = steps
        ) -> Any:
            offered.append(sorted(t.name for t in info.function_tools))
            step = next(steps, None)
            if step is None:
                return msgs.ModelResponse(parts=[msgs.TextPart('done')])
            return msgs.ModelResponse(parts=[msgs.ToolCallPart(tool, {}, call_id) for tool, call_id in step])

        agent = lib.Agent(model_cls(model))

        agent.tool_plain(revealer(lib), name='reveal')
        agent.tool_plain(lambda: 'p', name='plain')
        agent.tool_plain(lambda: 'h', name='hidden', defer_loading=True)
        result = agent.run_sync('go')
        out[name] = (offered, shapes(result.all_messages()))
    return out


def revealer(lib: Any) -> Any:
    def reveal() -> Any:
        return lib.ToolReturn('revealed', content='see the new tool', tools=['hidden', 'hidden', 'plain', 'nope'])

    return reveal


def shapes(history: list[Any]) -> list[list[tuple[str, Any]]]:
    return [
        [(p.part_kind, getattr(p, 'tools_added', None) or getattr(p, 'tool_call_id', None)) for p in m.parts]
        for m in history
    ]


def test_the_same_tools_are_offered_and_the_same_parts_stored_as_pydantic_ai() -> None:
    both = run_both()
    assert both['threadline'] == both['reference']
    offered, stored = both['threadline']
    assert offered == [
        ['plain', 'reveal'],
        ['hidden', 'plain', 'reveal'],
        ['hidden', 'plain', 'reveal'],
        ['hidden', 'plain', 'reveal'],
    ]
    assert stored[2] == [
        ('tool-return', 'c1'),
        ('tool-availability-delta', ['hidden', 'plain', 'nope']),
        ('tool-return', 'c2'),
        ('user-prompt', None),
    ]
    assert stored[6] == [('tool-return', 'c4'), ('user-prompt', None)]  # nothing new to reveal: no delta


def agent_with_hidden(offered: list[list[str]], capabilities: list[Any] | None = None) -> threadline.Agent[None, str]:
    def model(messages: list[Any], info: Any) -> Any:
        offered.append(sorted(t.name for t in info.function_tools))
        return threadline.ModelResponse(parts=[threadline.TextPart('ok')])

    agent = threadline.Agent(FunctionModel(model), capabilities=capabilities or [])
    agent.tool_plain(lambda: 'h', name='hidden', defer_loading=True)
    return agent


def revealing_history() -> list[Any]:
    m = our_messages
    return [
        m.ModelRequest(parts=[m.UserPromptPart('first')]),
        m.ModelResponse(parts=[m.ToolCallPart('reveal', {}, 'c1')]),
        m.ModelRequest(
            parts=[
                m.ToolReturnPart('reveal', 'revealed', 'c1'),
                m.ToolAvailabilityDeltaPart(tools_added=['hidden'], tool_call_id='c1'),
            ]
        ),
        m.ModelResponse(parts=[m.TextPart('a1')]),
        m.ModelRequest(parts=[m.UserPromptPart('second')]),
        m.ModelResponse(parts=[m.TextPart('a2')]),
    ]


def test_a_replayed_history_reproduces_the_tool_set() -> None:
    offered: list[list[str]] = []
    agent_with_hidden(offered).run_sync('third', message_history=revealing_history())
    loaded = our_messages.ModelMessagesTypeAdapter.validate_json(
        our_messages.ModelMessagesTypeAdapter.dump_json(revealing_history())
    )
    agent_with_hidden(offered).run_sync('third', message_history=loaded)  # through the JSON form too
    agent_with_hidden(offered).run_sync('third')  # a fresh conversation: still hidden
    assert offered == [['hidden'], ['hidden'], []]


@pytest.mark.parametrize(
    ('processor', 'shown'),
    [(KeepLastTurns(1), []), (ClearOldToolResults(keep_turns=1), ['hidden'])],
)
def test_processors_keep_the_reveal_with_its_result_or_drop_both(processor: Any, shown: list[str]) -> None:
    offered: list[list[str]] = []
    agent_with_hidden(offered, [ProcessHistory(processor)]).run_sync('third', message_history=revealing_history())
    # KeepLastTurns drops the revealing turn whole (call, result and delta): the tool is hidden again,
    # as pydantic-ai documents. ClearOldToolResults keeps every part in place: still revealed.
    assert offered == [shown]


def test_an_unrevealed_deferred_tool_is_an_unknown_tool() -> None:
    calls = iter([[('hidden', 'c1')], None])

    def model(messages: list[Any], info: Any) -> Any:
        step = next(calls)
        if step is None:
            return threadline.ModelResponse(parts=[threadline.TextPart('ok')])
        return threadline.ModelResponse(parts=[threadline.ToolCallPart(t, {}, c) for t, c in step])

    ran: list[str] = []
    agent = threadline.Agent(FunctionModel(model))

    @agent.tool_plain(defer_loading=True)
    def hidden() -> str:
        ran.append('hidden')
        return 'h'

    result = agent.run_sync('go')
    retry = result.all_messages()[2].parts[0]
    assert ran == [] and retry.outcome == 'retried' and 'Unknown tool name' in retry.content
