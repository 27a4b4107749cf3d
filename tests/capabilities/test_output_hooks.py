"""Output hooks: validation and processing lifecycles of a run's output, called in the order, with
the values, pydantic-ai 2.62 calls them with; error hooks recover; a wrap encloses the rest."""

from __future__ import annotations

from typing import Any

import pydantic
import pydantic_ai
import pytest
from pydantic_ai import capabilities as ref_capabilities
from pydantic_ai import messages as ref_messages
from pydantic_ai.models.function import FunctionModel as RefFunctionModel

import threadline
from threadline import messages as our_messages
from threadline.capabilities import AbstractCapability
from threadline.models.function import FunctionModel

LIBS = {
    'threadline': (threadline, our_messages, threadline.capabilities, FunctionModel),
    'reference': (pydantic_ai, ref_messages, ref_capabilities, RefFunctionModel),
}


class City(pydantic.BaseModel):
    name: str


def make_city(name: str, population: int) -> City:
    """Build a city."""
    return City(name=f'{name} ({population})')


def recorder(lib: str, log: list[str]) -> Any:
    base = LIBS[lib][2].AbstractCapability

    class OutputRecorder(base):  # type: ignore[misc,valid-type]
        async def wrap_output_validate(self, ctx: Any, *, output_context: Any, output: Any, handler: Any) -> Any:
            log.append(f'wrap validate {output_context.mode} {output!r}')
            return await handler(output)

        async def before_output_validate(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
            log.append(f'before validate {output!r}')
            return output

        async def after_output_validate(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
            log.append(f'after validate {output!r}')
            return output

        async def wrap_output_process(self, ctx: Any, *, output_context: Any, output: Any, handler: Any) -> Any:
            log.append(f'wrap process {output_context.has_function}')
            return await handler(output)

        async def before_output_process(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
            log.append(f'before process {output!r}')
            return output

        async def after_output_process(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
            log.append(f'after process {output!r}')
            return output

    return OutputRecorder()


def run(lib: str, case: str) -> tuple[list[str], Any]:
    mod, msgs, _, model_cls = LIBS[lib]
    output_type = {'function': make_city, 'native': mod.NativeOutput(City), 'text': str}[case]

    def model(messages: list[Any], info: Any) -> Any:
        if info.output_tools:
            tool = info.output_tools[0].name
            return msgs.ModelResponse(parts=[msgs.ToolCallPart(tool, {'name': 'Oslo', 'population': 7}, 'o')])
        return msgs.ModelResponse(parts=[msgs.TextPart('{"name": "Oslo"}' if case == 'native' else 'hi')])

    log: list[str] = []
    result = mod.Agent(model_cls(model), output_type=output_type, capabilities=[recorder(lib, log)]).run_sync('go')
    return log, repr(result.output)


@pytest.mark.parametrize('case', ['function', 'native', 'text'])
def test_output_hooks_run_as_in_pydantic_ai(case: str) -> None:
    ours = run('threadline', case)
    assert ours == run('reference', case)
    first = 'wrap process' if case == 'text' else 'wrap validate'  # plain text is only processed
    assert ours[0][0].startswith(first) and ours[0][-1].startswith('after process')


def test_an_output_error_hook_recovers_and_an_after_hook_changes_the_output() -> None:
    class Lenient(AbstractCapability[Any]):
        async def on_output_validate_error(
            self, ctx: Any, *, output_context: Any, output: Any, error: Exception
        ) -> Any:
            return City(name='unknown')

        async def after_output_process(self, ctx: Any, *, output_context: Any, output: Any) -> Any:
            return City(name=output.name.upper())

    agent = threadline.Agent(
        FunctionModel(lambda m, i: our_messages.ModelResponse(parts=[our_messages.TextPart('not json')])),
        output_type=threadline.NativeOutput(City),
        capabilities=[Lenient()],
    )
    assert agent.run_sync('go').output == City(name='UNKNOWN')
