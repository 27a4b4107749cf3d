"""TestModel answers every output type and tool signature with the reference's arguments."""

from __future__ import annotations

from typing import Any, Literal

import pydantic_ai
import pydantic_ai.models.test
import pytest
from pydantic import BaseModel

import threadline
import threadline.models.test


class Inner(BaseModel):
    x: int
    y: str


OUTPUT_TYPES: list[Any] = [
    tuple[str, str],
    tuple[int, str, bool],
    list[int],
    list[Inner],
    dict[str, int],
    int,
    bool,
    float,
    Inner,
    str | int,
    Literal['yes', 'no'],
]


def _final_call(agent_class: Any, model_class: Any, output_type: Any) -> tuple[Any, Any]:
    result = agent_class(model_class(), output_type=output_type).run_sync('x')
    calls = [p for m in result.all_messages() for p in m.parts if type(p).__name__ == 'ToolCallPart']
    output = result.output.model_dump() if isinstance(result.output, BaseModel) else result.output
    return output, (calls[0].tool_name, calls[0].args) if calls else None


@pytest.mark.parametrize('output_type', OUTPUT_TYPES, ids=repr)
def test_output_types_are_answered_as_in_the_reference(output_type: Any) -> None:
    theirs = _final_call(pydantic_ai.Agent, pydantic_ai.models.test.TestModel, output_type)
    assert _final_call(threadline.Agent, threadline.models.test.TestModel, output_type) == theirs


def _tool_args(agent_class: Any, model_class: Any) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def tool(
        a: str,
        b: int,
        c: list[str],
        d: dict[str, float],
        e: bool,
        f: float | None,
        g: Literal['x', 'y'],
        h: Inner,
        i: tuple[int, str],
        j: str = 'default',
    ) -> str:
        seen.append({'a': a, 'b': b, 'c': c, 'd': d, 'e': e, 'f': f, 'g': g, 'h': h.model_dump(), 'i': i, 'j': j})
        return 'ok'

    agent = agent_class(model_class())
    agent.tool_plain(tool)
    agent.run_sync('x')
    return seen


def test_tool_arguments_are_generated_as_in_the_reference() -> None:
    theirs = _tool_args(pydantic_ai.Agent, pydantic_ai.models.test.TestModel)
    assert _tool_args(threadline.Agent, threadline.models.test.TestModel) == theirs
