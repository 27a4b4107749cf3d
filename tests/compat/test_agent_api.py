"""The agent API as in pydantic-ai 2.62, one script body on both libraries: decorator forms,
generic defaults, model names, toolsets and overrides."""

import functools
from typing import Any

import pytest

LIBS = ('ref', 'ours')


def _names(lib: str) -> Any:
    if lib == 'ref':
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.toolsets import FunctionToolset, WrapperToolset
    else:
        from threadline import Agent
        from threadline.messages import ModelResponse, TextPart
        from threadline.models.function import FunctionModel
        from threadline.toolsets import FunctionToolset, WrapperToolset
    return Agent, ModelResponse, TextPart, FunctionModel, FunctionToolset, WrapperToolset


def agent_api(lib: str) -> dict[str, Any]:
    Agent, ModelResponse, TextPart, FunctionModel, FunctionToolset, WrapperToolset = _names(lib)
    seen: dict[str, Any] = {}

    def answer(messages: list[Any], info: Any, tone: str = 'plain') -> Any:
        seen['settings'] = info.model_settings
        seen['instructions'] = messages[-1].instructions
        return ModelResponse(parts=[TextPart('ok')])

    model = FunctionModel(functools.partial(answer, tone='dry'))
    out: dict[str, Any] = {'model name': model.model_name, 'one type argument': repr(Agent[int]).split('.')[-1]}

    agent = Agent(model)

    @agent.instructions()
    def brief() -> str:
        return 'be brief'

    agent.run_sync('x')
    out['instructions()'] = seen['instructions']

    own, other = FunctionToolset(), FunctionToolset()
    out['wrapped'] = WrapperToolset(own).wrapped is own
    with_toolsets = Agent(model, toolsets=[own])
    out['toolsets'] = [t is own for t in with_toolsets.toolsets]
    with with_toolsets.override(toolsets=[other]):
        out['toolsets under override'] = [t is other for t in with_toolsets.toolsets]

    tuned = Agent(model, model_settings={'temperature': 0.1})
    with tuned.override(model_settings={'temperature': 0.5}):
        tuned.run_sync('x', model_settings={'temperature': 0.9})
    out['override settings'] = seen['settings']
    return out


def test_the_agent_api_behaves_as_the_reference() -> None:
    ref, ours = (agent_api(lib) for lib in LIBS)
    assert ours == ref
    assert ours['instructions()'] == 'be brief'
    assert ours['one type argument'] == 'Agent[int, str]'


@pytest.mark.parametrize('lib', LIBS)
def test_agent_tools_are_the_first_toolset(lib: str) -> None:
    Agent, _, _, _, FunctionToolset, _ = _names(lib)
    agent = Agent('test')

    @agent.tool_plain
    def ping() -> str:
        return 'pong'

    first = agent.toolsets[0]
    assert isinstance(first, FunctionToolset)
    assert list(first.tools) == ['ping']
