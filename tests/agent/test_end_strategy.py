"""`end_strategy`: what happens to function tool calls beside an output tool call. Each strategy
runs the same scripted responses through Threadline and pydantic-ai 2.62 and must record the same
results, run the same tools and give the same output."""

from __future__ import annotations

from typing import Any

import pydantic
import pydantic_ai
import pytest
from pydantic_ai import messages as ref_messages
from pydantic_ai.models.function import FunctionModel as RefFunctionModel

import threadline
from threadline import messages as our_messages
from threadline.exceptions import UserError
from threadline.models.function import FunctionModel

LIBS = {
    'threadline': (threadline, our_messages, FunctionModel),
    'reference': (pydantic_ai, ref_messages, RefFunctionModel),
}


class Out(pydantic.BaseModel):
    x: int


FIRST = [('f', {'n': 1}, 'a'), (None, {'x': 1}, 'b'), ('f', {'n': 2}, 'c'), (None, {'x': 2}, 'd')]
BAD_OUTPUT = [('f', {'n': 1}, 'a'), (None, {'x': 'not a number'}, 'b')]


def run(lib: str, strategy: str, first: list[Any], retry_on: int | None) -> tuple[Any, list[int], list[Any]]:
    mod, msgs, model_cls = LIBS[lib]
    ran: list[int] = []

    def model(messages: list[Any], info: Any) -> Any:
        output_tool = info.output_tools[0].name
        calls = first if len(messages) == 1 else [(None, {'x': 9}, 'e')]
        return msgs.ModelResponse(
            parts=[msgs.ToolCallPart(name or output_tool, args, cid) for name, args, cid in calls]
        )

    agent = mod.Agent(model_cls(model), output_type=Out, end_strategy=strategy)

    @agent.tool_plain
    def f(n: int) -> int:
        ran.append(n)
        if n == retry_on:
            raise mod.ModelRetry('again')
        return n

    result = agent.run_sync('go')
    records = [
        [(p.part_kind, getattr(p, 'tool_call_id', None), str(getattr(p, 'content', ''))) for p in m.parts]
        for m in result.all_messages()[2:]
    ]
    # Sync tools run concurrently in worker threads, so which one starts first is not fixed (the
    # reference itself ran them in either order in CI); what ran is the behaviour under test.
    return result.output.x, sorted(ran), records


@pytest.mark.parametrize('strategy', ['early', 'graceful', 'exhaustive'])
@pytest.mark.parametrize(('first', 'retry_on'), [(FIRST, None), (FIRST, 2), (BAD_OUTPUT, None)])
def test_each_strategy_records_and_runs_what_pydantic_ai_does(
    strategy: str, first: list[Any], retry_on: int | None
) -> None:
    ours = run('threadline', strategy, first, retry_on)
    assert ours == run('reference', strategy, first, retry_on)


def test_the_default_is_graceful_and_early_skips_the_function_tools() -> None:
    output, ran, _ = run('threadline', 'graceful', FIRST, None)
    assert (output, ran) == (1, [1, 2])
    output, ran, records = run('threadline', 'early', FIRST, None)
    assert (output, ran) == (1, [])
    assert records[0][2][2] == 'Tool not executed - a final result was already processed.'
    assert threadline.Agent().end_strategy == 'graceful'
    with pytest.raises(UserError, match="end_strategy must be 'early', 'graceful' or 'exhaustive'"):
        threadline.Agent(end_strategy='eager')  # type: ignore[arg-type]
