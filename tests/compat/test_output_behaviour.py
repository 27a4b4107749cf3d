"""Output validators, output hooks and output functions behave as in pydantic-ai 2.62: one script
body runs on both libraries and what it records must be equal.

Annotations are evaluated as written (no `from __future__ import annotations`), so a function's
`RunContext` is the one of the library the script runs on."""

import json
from types import SimpleNamespace
from typing import Any

import pydantic
import pytest

from tests.compat._libs import library, parts_of


class Answer(pydantic.BaseModel):
    n: int


def validator_script(lib: SimpleNamespace, mode: str) -> list[Any]:
    """An output validator that asks twice for another answer, recording its context each time."""
    log: list[Any] = []

    def model(messages: list[Any], info: Any) -> Any:
        k = len(messages)
        if k == 1:
            return lib.ModelResponse(parts=[lib.ToolCallPart('helper', {}, 'h1')])
        if mode == 'tool':
            return lib.ModelResponse(parts=[lib.ToolCallPart(info.output_tools[0].name, {'n': k}, f'o{k}')])
        return lib.ModelResponse(parts=[lib.TextPart(f'text {k}' if mode == 'text' else json.dumps({'n': k}))])

    output_type = {
        'tool': lib.ToolOutput(Answer, max_retries=4),
        'text': str,
        'native': lib.NativeOutput(Answer),
        'prompted': lib.PromptedOutput(Answer),
    }[mode]
    agent = lib.Agent(lib.FunctionModel(model), output_type=output_type, retries=3)

    @agent.tool_plain(retries=5)
    def helper() -> str:
        return 'h'

    @agent.output_validator
    def check(ctx: lib.RunContext, output: Any) -> Any:  # type: ignore[name-defined]
        log.append([ctx.retry, ctx.max_retries, ctx.tool_name, ctx.tool_call_id, ctx.run_step, dict(ctx.retries)])
        if ctx.retry < 2:
            raise lib.ModelRetry('again')
        return output

    log.append(str(agent.run_sync('hi').output))
    return log


@pytest.mark.parametrize('mode', ['tool', 'text', 'native', 'prompted'])
def test_an_output_validator_sees_the_outputs_retries_and_tool(mode: str) -> None:
    ours, reference = validator_script(library('ours'), mode), validator_script(library('ref'), mode)
    assert ours == reference
    assert [entry[0] for entry in ours[:-1]] == [0, 1, 2]  # the retries count, so the validator can stop


class Recording:
    """Output hooks that record what they see and may raise a `ValidationError` once, at `fail`."""

    def __init__(self, log: list[Any], fail: str | None) -> None:
        self.log, self.fail, self.failed = log, fail, False

    def see(self, where: str, output: Any) -> Any:
        self.log.append([where, repr(output)])
        if where == self.fail and not self.failed:
            self.failed = True
            pydantic.TypeAdapter(int).validate_python('not a number')
        return output


def hooks_script(lib: SimpleNamespace, fail: str | None, arguments_as_text: bool) -> list[Any]:
    log: list[Any] = []
    seen = Recording(log, fail)

    class Hooks(lib.AbstractCapability):  # type: ignore[name-defined,misc]
        async def before_output_validate(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
            return seen.see('before_validate', output)

        async def after_output_validate(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
            return seen.see('after_validate', output)

        async def before_output_process(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
            return seen.see('before_process', output)

        async def after_output_process(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
            return seen.see('after_process', output)

    def count_of(ctx: lib.RunContext, count: int) -> str:  # type: ignore[name-defined]
        log.append(['function', count, ctx.retry, ctx.max_retries, ctx.tool_name])
        if fail == 'function' and not seen.failed:
            seen.failed = True
            pydantic.TypeAdapter(int).validate_python('not a number')
        return f'count {count}'

    def model(messages: list[Any], info: Any) -> Any:
        name, k = info.output_tools[0].name, len(messages)
        args = json.dumps({'count': k}) if arguments_as_text else {'count': k}
        return lib.ModelResponse(parts=[lib.ToolCallPart(name, args, f'o{k}')])

    capabilities = [] if fail == 'function' else [Hooks()]
    output_type = lib.ToolOutput(count_of, max_retries=4)
    result = lib.Agent(lib.FunctionModel(model), output_type=output_type, capabilities=capabilities).run_sync('hi')
    log.append([result.output, parts_of(result.all_messages(), 'tool-return', 'retry-prompt')])
    return log


@pytest.mark.parametrize(
    'fail', [None, 'before_validate', 'after_validate', 'before_process', 'after_process', 'function']
)
@pytest.mark.parametrize('arguments_as_text', [False, True])
def test_output_hooks_see_a_one_argument_functions_value_and_a_validation_error_is_a_retry(
    fail: str | None, arguments_as_text: bool
) -> None:
    ours = hooks_script(library('ours'), fail, arguments_as_text)
    assert ours == hooks_script(library('ref'), fail, arguments_as_text)
    if fail is None:
        assert ['after_validate', '1'] in ours  # the value, not {'count': 1}
    else:
        assert "'type': 'int_parsing'" in ours[-1][1][0][2]  # the model was told what failed


def native_hook_script(lib: SimpleNamespace, fail: str) -> list[Any]:
    log: list[Any] = []
    seen = Recording(log, fail)

    class Hooks(lib.AbstractCapability):  # type: ignore[name-defined,misc]
        async def before_output_validate(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
            return seen.see('before_validate', output)

        async def before_output_process(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
            return seen.see('before_process', output)

    def model(messages: list[Any], info: Any) -> Any:
        return lib.ModelResponse(parts=[lib.TextPart(json.dumps({'n': len(messages)}))])

    agent = lib.Agent(lib.FunctionModel(model), output_type=lib.NativeOutput(Answer), capabilities=[Hooks()])
    result = agent.run_sync('hi')
    log.append([str(result.output), parts_of(result.all_messages(), 'retry-prompt', 'tool-return')])
    return log


@pytest.mark.parametrize('fail', ['before_validate', 'before_process'])
def test_a_validation_error_in_a_hook_of_native_output_is_a_retry(fail: str) -> None:
    ours = native_hook_script(library('ours'), fail)
    assert ours == native_hook_script(library('ref'), fail)
    assert ours[-1][0] == 'n=3'
