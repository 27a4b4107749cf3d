"""Tool and output-function arguments as pydantic-ai 2.62 offers them: the same script runs on
both libraries, and the schemas, descriptions, arguments and results must be equal.

Annotations are evaluated as written (no `from __future__ import annotations`): a tool's
`RunContext` is the one of the library the script runs on."""

import dataclasses
import json
from types import SimpleNamespace
from typing import Any

import pydantic
import pytest
from typing_extensions import TypedDict

from tests.compat._libs import library


class Inner(pydantic.BaseModel):
    """An inner thing."""

    a: int = pydantic.Field(description='the a')


class Outer(pydantic.BaseModel):
    """Outer doc."""

    inner: Inner
    tags: list[str] = []


class Keys(TypedDict):
    k: str


@dataclasses.dataclass
class Point:
    """A point."""

    x: int
    y: int


class Named(pydantic.BaseModel):
    """A model with a field called as the tool's parameter."""

    order: int


def _parts(messages: list[Any], *kinds: str) -> list[list[Any]]:
    return [
        [p.part_kind, getattr(p, 'tool_name', None), p.args if p.part_kind == 'tool-call' else str(p.content)[:60]]
        for m in messages
        for p in m.parts
        if p.part_kind in kinds
    ]


def schemas_script(lib: SimpleNamespace) -> dict[str, Any]:
    model = lib.TestModel()
    agent = lib.Agent(model)

    @agent.tool_plain
    def two(o: Outer, n: int) -> str:
        return f'{o.inner.a} {n}'

    @agent.tool_plain
    def one(o: Outer) -> str:
        return f'one {o.inner.a} {o.tags}'

    @agent.tool_plain
    def one_documented(o: Outer) -> str:
        """The tool's own description."""
        return 'documented'

    @agent.tool_plain
    def keys(t: Keys) -> str:
        return f'keys {t["k"]}'

    @agent.tool
    def point(ctx: lib.RunContext[None], p: Point) -> str:
        return f'{p.x},{p.y}'

    @agent.tool_plain
    def with_default(o: Outer = Outer(inner=Inner(a=1))) -> str:  # noqa: B008 (a default the schema shows)
        return f'default {o.inner.a}'

    @agent.tool_plain
    def primitive(x: int) -> str:
        return f'x={x}'

    result = agent.run_sync('hi')
    tools = model.last_model_request_parameters.function_tools
    return {
        'tools': {t.name: [t.description, t.parameters_json_schema] for t in tools},
        'parts': _parts(result.all_messages(), 'tool-call', 'tool-return', 'retry-prompt'),
        'output': result.output,
    }


def test_tool_schemas_descriptions_and_arguments_match_the_reference() -> None:
    ours, reference = schemas_script(library('ours')), schemas_script(library('ref'))
    assert ours['tools'] == reference['tools']
    # a lone model-like parameter takes the model's own schema, and its docstring when the tool has none
    assert ours['tools']['one'][0] == 'Outer doc.' and 'inner' in ours['tools']['one'][1]['properties']
    assert ours['tools']['two'][1]['$defs']['Inner']['title'] == 'Inner'  # only property titles go
    assert ours['parts'] == reference['parts']
    assert ours['output'] == reference['output']


def function_script(lib: SimpleNamespace, calls: list[tuple[str, Any]]) -> dict[str, Any]:
    """An output function and tools with a lone model parameter, called with `calls` (tool name,
    arguments) in the first response, then the output function."""
    seen: dict[str, Any] = {}

    def model(messages: list[Any], info: Any) -> Any:
        if len(messages) == 1:
            seen['output_tools'] = [[t.name, t.description, t.parameters_json_schema] for t in info.output_tools]
            return lib.ModelResponse(parts=[lib.ToolCallPart(n, a, f'c{i}') for i, (n, a) in enumerate(calls)])
        if len(messages) == 3:
            return lib.ModelResponse(parts=[lib.ToolCallPart(info.output_tools[0].name, {'x': 9, 'y': 8}, 'out')])
        return lib.ModelResponse(parts=[lib.TextPart('giving up')])

    def place(point: Point) -> str:
        return f'placed at {point.x},{point.y}'

    agent = lib.Agent(lib.FunctionModel(model), output_type=place)

    @agent.tool_plain
    def lookup(order: Outer) -> str:
        return f'order {order.inner.a}'

    @agent.tool_plain
    def named(order: Named) -> str:
        return f'named {order.order}'

    result = agent.run_sync('hi')
    return {**seen, 'output': result.output, 'parts': _parts(result.all_messages(), 'tool-return', 'retry-prompt')}


@pytest.mark.parametrize(
    'calls',
    [
        [('lookup', {'inner': {'a': 3}})],  # unwrapped, as the schema asks
        [('lookup', {'order': {'inner': {'a': 4}}})],  # wrapped in the parameter's name
        [('lookup', json.dumps({'inner': {'a': 5}, 'tags': ['x']}))],  # JSON text
        [('named', {'order': 6})],  # the field has the parameter's name: unwrapped
        [('named', {'order': {'order': 7}})],  # ... unless only the wrapped reading is valid
        [('lookup', {'inner': {'a': 'not a number'}})],  # invalid: the model is asked again
        [('lookup', '{"inner": ')],  # not JSON
    ],
)
def test_a_lone_model_parameter_takes_what_the_reference_takes(calls: list[tuple[str, Any]]) -> None:
    ours, reference = function_script(library('ours'), calls), function_script(library('ref'), calls)
    assert ours == reference
    assert ours['output'] == 'placed at 9,8'
