"""How output tools are named and described to hooks, which output combinations are allowed, and
what `TestModel(custom_output_args=)` and `wrap_output_validate` handlers do, as in pydantic-ai
2.62 (one script body on both libraries). Error wording may differ; exception types may not."""

import json
from types import SimpleNamespace
from typing import Any, Generic, TypeVar

import pydantic
import pytest

from tests.compat._libs import library

T = TypeVar('T')


class Box(pydantic.BaseModel, Generic[T]):
    item: T


class A(pydantic.BaseModel):
    a: int


def output_tool_names(lib: SimpleNamespace, case: str) -> list[str]:
    output_type = {
        'one generic': Box[int],
        'two generics': [Box[int], Box[str]],
        'the same type twice': [lib.ToolOutput(A), lib.ToolOutput(A)],
        'a name and a default': [lib.ToolOutput(A, name='x'), lib.ToolOutput(A)],
    }[case]
    model = lib.TestModel()
    lib.Agent(model, output_type=output_type).run_sync('hi')
    return [t.name for t in model.last_model_request_parameters.output_tools]


@pytest.mark.parametrize('case', ['one generic', 'two generics', 'the same type twice', 'a name and a default'])
def test_output_tools_are_named_as_the_reference_names_them(case: str) -> None:
    assert output_tool_names(library('ours'), case) == output_tool_names(library('ref'), case)


def object_defs(lib: SimpleNamespace, case: str) -> list[Any]:
    seen: list[Any] = []

    class Seeing(lib.AbstractCapability):  # type: ignore[name-defined,misc]
        async def before_output_validate(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
            definition = output_context.object_def
            seen.append([output_context.mode, definition and definition.name, definition and definition.json_schema])
            return output

    def model(messages: list[Any], info: Any) -> Any:
        if info.output_tools:
            return lib.ModelResponse(parts=[lib.ToolCallPart(info.output_tools[0].name, {'a': 1}, 'o')])
        return lib.ModelResponse(parts=[lib.TextPart('{"a": 1}')])

    output_type = {'type': A, 'native': lib.NativeOutput(A), 'tool output': lib.ToolOutput(A)}[case]
    lib.Agent(lib.FunctionModel(model), output_type=output_type, capabilities=[Seeing()]).run_sync('hi')
    return seen


@pytest.mark.parametrize('case', ['type', 'native', 'tool output'])
def test_output_hooks_are_told_the_object_definition(case: str) -> None:
    ours = object_defs(library('ours'), case)
    assert ours == object_defs(library('ref'), case)
    assert ours[0][1] == 'A'


def deferred_beside(lib: SimpleNamespace, marker: str, first: str) -> str:
    def model(messages: list[Any], info: Any) -> Any:
        if first == 'approval' and len(messages) == 1:
            return lib.ModelResponse(parts=[lib.ToolCallPart('danger', {}, 'd1')])
        return lib.ModelResponse(parts=[lib.TextPart('{"a": 3}')])

    kind = getattr(lib, marker)
    agent = lib.Agent(lib.FunctionModel(model), output_type=[kind(A), lib.DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def danger() -> str:
        return 'done'

    return repr(agent.run_sync('hi').output)


@pytest.mark.parametrize('first', ['text', 'approval'])
@pytest.mark.parametrize('marker', ['NativeOutput', 'PromptedOutput'])
def test_a_json_output_marker_may_stand_beside_deferred_tool_requests(marker: str, first: str) -> None:
    ours = deferred_beside(library('ours'), marker, first)
    assert ours == deferred_beside(library('ref'), marker, first)


@pytest.mark.parametrize('marker', ['NativeOutput', 'PromptedOutput'])
def test_deferred_tool_requests_inside_a_json_output_marker_is_refused(marker: str) -> None:
    for name in ('ours', 'ref'):
        lib = library(name)
        with pytest.raises(Exception) as raised:
            lib.Agent(lib.TestModel(), output_type=getattr(lib, marker)([A, lib.DeferredToolRequests]))
        assert type(raised.value).__name__ == 'UserError'


def custom_output(lib: SimpleNamespace, output_type: Any, args: Any) -> list[str]:
    try:
        return [
            'output',
            repr(lib.Agent(lib.TestModel(custom_output_args=args), output_type=output_type).run_sync('hi').output),
        ]
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return ['error', type(error).__name__]


@pytest.mark.parametrize(
    ('output_type', 'args'),
    [(tuple[int, str], [1, 'x']), (tuple[int, str], {'response': [1, 'x']}), (list[int], [1, 2]), (A, {'a': 4})],
)
def test_custom_output_args_are_the_outputs_value(output_type: Any, args: Any) -> None:
    assert custom_output(library('ours'), output_type, args) == custom_output(library('ref'), output_type, args)


def wrapped_validation(lib: SimpleNamespace, native: bool) -> list[Any]:
    raised: list[str] = []

    class Wrapping(lib.AbstractCapability):  # type: ignore[name-defined,misc]
        async def wrap_output_validate(self, ctx: Any, *, output_context: Any, output: Any, handler: Any) -> Any:
            try:
                return await handler(output)
            except Exception as error:
                raised.append(type(error).__name__)
                raise

    def model(messages: list[Any], info: Any) -> Any:
        value = {'a': 'not a number'} if len(messages) == 1 else {'a': 2}
        if info.output_tools:
            return lib.ModelResponse(parts=[lib.ToolCallPart(info.output_tools[0].name, value, f'o{len(messages)}')])
        return lib.ModelResponse(parts=[lib.TextPart(json.dumps(value))])

    output_type = lib.NativeOutput(A) if native else A
    result = lib.Agent(lib.FunctionModel(model), output_type=output_type, capabilities=[Wrapping()]).run_sync('hi')
    return [raised, repr(result.output)]


@pytest.mark.parametrize('native', [False, True])
def test_a_wrap_output_validate_handler_raises_pydantics_validation_error(native: bool) -> None:
    ours = wrapped_validation(library('ours'), native)
    assert ours == wrapped_validation(library('ref'), native)
    assert ours == [['ValidationError'], 'A(a=2)']
