"""Tool options as pydantic-ai 2.62 has them: `prepare`, `args_validator`, `timeout`, `metadata`,
`sequential` (the scripted run is compared with the reference's), and the order `sequential` imposes."""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic
import pydantic_ai
import pytest
from pydantic_ai import messages as ref_messages
from pydantic_ai.models.function import FunctionModel as RefFunctionModel

import threadline
from threadline import messages as our_messages
from threadline.models.function import FunctionModel

LIBS = {
    'threadline': (threadline, our_messages, FunctionModel),
    'reference': (pydantic_ai, ref_messages, RefFunctionModel),
}


def run(lib: str) -> tuple[list[Any], list[Any]]:
    mod, msgs, model_cls = LIBS[lib]
    offered: list[Any] = []

    def model(messages: list[Any], info: Any) -> Any:
        offered.append([(t.name, t.metadata, t.sequential) for t in info.function_tools])
        if len(messages) == 1:
            return msgs.ModelResponse(
                parts=[msgs.ToolCallPart('slow', {'x': 1}, 'a'), msgs.ToolCallPart('checked', {'n': -1}, 'b')]
            )
        return msgs.ModelResponse(parts=[msgs.TextPart('done')])

    agent = mod.Agent(model_cls(model))

    @agent.tool_plain(timeout=0.05, metadata={'team': 'x'})
    async def slow(x: int) -> int:
        await asyncio.sleep(1)
        return x

    def check(ctx: Any, n: int) -> None:
        if n < 0:
            raise mod.ModelRetry('n must be >= 0')

    async def first_step_only(ctx: Any, tool_def: Any) -> Any:
        return tool_def if ctx.run_step < 2 else None

    @agent.tool_plain(args_validator=check, prepare=first_step_only, sequential=True)
    def checked(n: int) -> int:
        return n

    result = agent.run_sync('go')
    records = [
        [
            (p.part_kind, getattr(p, 'content', None), getattr(p, 'outcome', None), repr(getattr(p, 'retry', None)))
            for p in m.parts
        ]
        for m in result.all_messages()[1:]
    ]
    return offered, records


def test_tool_options_behave_as_in_pydantic_ai() -> None:
    ours = run('threadline')
    assert ours == run('reference')
    offered, records = ours
    assert offered == [[('slow', {'team': 'x'}, False), ('checked', None, True)], [('slow', {'team': 'x'}, False)]]
    assert [r[1] for r in records[1]] == ['Timed out after 0.05 seconds.', 'n must be >= 0']


def test_a_sequential_tool_runs_alone_between_the_calls_around_it() -> None:
    events: list[str] = []

    def model(messages: list[Any], info: Any) -> Any:
        if len(messages) == 1:
            names = ['a', 'b', 'barrier', 'c', 'd']
            return our_messages.ModelResponse(
                parts=[our_messages.ToolCallPart('work' if n != 'barrier' else 'barrier', {'tag': n}, n) for n in names]
            )
        return our_messages.ModelResponse(parts=[our_messages.TextPart('done')])

    agent = threadline.Agent(FunctionModel(model))

    @agent.tool_plain
    async def work(tag: str) -> str:
        events.append(f'start {tag}')
        await asyncio.sleep(0.01)
        events.append(f'end {tag}')
        return tag

    @agent.tool_plain(sequential=True)
    async def barrier(tag: str) -> str:
        events.append('barrier')
        return tag

    agent.run_sync('go')
    at = events.index('barrier')
    assert sorted(events[:at]) == ['end a', 'end b', 'start a', 'start b']
    assert sorted(events[at + 1 :]) == ['end c', 'end d', 'start c', 'start d']


def test_a_sync_tool_past_its_timeout_is_reported_to_the_model() -> None:
    import time

    def model(messages: list[Any], info: Any) -> Any:
        if len(messages) == 1:
            return our_messages.ModelResponse(parts=[our_messages.ToolCallPart('sleepy', {}, 's')])
        return our_messages.ModelResponse(parts=[our_messages.TextPart(messages[-1].parts[0].content)])

    agent = threadline.Agent(FunctionModel(model))

    @agent.tool_plain(timeout=0.05)
    def sleepy() -> str:
        time.sleep(0.3)
        return 'late'

    assert agent.run_sync('go').output == 'Timed out after 0.05 seconds.'


class Totals(pydantic.BaseModel):
    """Result."""

    total: int
    note: str | None = None


def return_schema_tools(lib: str) -> list[Any]:
    mod, msgs, model_cls = LIBS[lib]
    seen: list[Any] = []

    def model(messages: list[Any], info: Any) -> Any:
        seen.extend((t.name, t.description, t.return_schema) for t in info.function_tools)
        return msgs.ModelResponse(parts=[msgs.TextPart('x')])

    agent = mod.Agent(model_cls(model))

    @agent.tool_plain(include_return_schema=True)
    def count(a: int) -> int:
        """Count things."""
        return a

    @agent.tool_plain(include_return_schema=True)
    def summary(a: int) -> Totals:
        return Totals(total=a)

    @agent.tool_plain
    def plain(a: int) -> int:
        return a

    @agent.tool_plain(include_return_schema=True)
    def nothing(a: int):  # type: ignore[no-untyped-def]
        return a

    with pytest.warns(UserWarning, match="'nothing' has `include_return_schema` enabled but no meaningful"):
        agent.run_sync('go')
    return seen


def test_return_schemas_go_into_descriptions_as_in_pydantic_ai() -> None:
    ours = return_schema_tools('threadline')
    assert ours == return_schema_tools('reference')
    assert ours[0][1] == 'Count things.\n\nReturn schema:\n\n{\n  "type": "integer"\n}'
