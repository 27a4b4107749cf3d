"""Toolsets through Threadline and pydantic-ai 2.62: the same agents with the same toolsets (function,
prefixed, renamed, filtered per step, prepared, combined, external) offer the same tools at every
request, call the same functions and store the same results."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pydantic_ai
import pytest
from pydantic_ai import messages as ref_messages
from pydantic_ai import toolsets as ref_toolsets
from pydantic_ai.models.function import FunctionModel as RefFunctionModel

import threadline
from threadline import messages as our_messages
from threadline import toolsets as our_toolsets
from threadline.exceptions import UserError
from threadline.models.function import FunctionModel

LIBS = {
    'threadline': (threadline, our_messages, our_toolsets, FunctionModel),
    'reference': (pydantic_ai, ref_messages, ref_toolsets, RefFunctionModel),
}


def weather_tools(lib: str) -> Any:
    toolsets = LIBS[lib][2]
    ts = toolsets.FunctionToolset()

    @ts.tool_plain
    def forecast(city: str) -> str:
        """Tomorrow's weather."""
        return f'sun in {city}'

    @ts.tool_plain
    def alerts(city: str) -> str:
        """Storm warnings."""
        return f'no alerts in {city}'

    return ts


def shapes(lib: str) -> dict[str, Any]:
    """Each way of reshaping a toolset, built from `lib`'s classes."""
    toolsets = LIBS[lib][2]

    def only_after_first_step(ctx: Any, tool_def: Any) -> bool:
        return tool_def.name != 'alerts' or ctx.run_step > 1

    def louder(ctx: Any, tool_defs: list[Any]) -> list[Any]:
        return [
            replace(d, description=(d.description or '') + ' (say it loud)') for d in tool_defs if d.name != 'alerts'
        ]

    return {
        'plain': weather_tools(lib),
        'prefixed': weather_tools(lib).prefixed('wx'),
        'renamed': weather_tools(lib).renamed({'weather': 'forecast'}),
        'filtered': weather_tools(lib).filtered(only_after_first_step),
        'prepared': weather_tools(lib).prepared(louder),
        'combined': toolsets.CombinedToolset([weather_tools(lib).prefixed('a'), weather_tools(lib).prefixed('b')]),
    }


def run(lib: str, shape: str) -> tuple[list[Any], list[Any], Any]:
    mod, msgs, _, model_cls = LIBS[lib]
    offered: list[Any] = []

    def model(messages: list[Any], info: Any) -> Any:
        tools = sorted((t.name, t.description) for t in info.function_tools)
        offered.append(tools)
        if len(offered) == 1:
            name = tools[0][0]
            return msgs.ModelResponse(parts=[msgs.ToolCallPart(name, {'city': 'Oslo'}, 'c1')])
        if len(offered) == 2:
            calls = [msgs.ToolCallPart(name, {'city': 'Rome'}, f'd{i}') for i, (name, _) in enumerate(tools)]
            return msgs.ModelResponse(parts=calls)
        return msgs.ModelResponse(parts=[msgs.TextPart('done')])

    agent = mod.Agent(model_cls(model), toolsets=[shapes(lib)[shape]])
    result = agent.run_sync('weather?')
    returns = [
        (p.tool_name, p.tool_call_id, p.content, p.outcome)
        for m in result.all_messages()
        for p in m.parts
        if p.part_kind == 'tool-return'
    ]
    return offered, returns, result.output


@pytest.mark.parametrize('shape', ['plain', 'prefixed', 'renamed', 'filtered', 'prepared', 'combined'])
def test_each_toolset_shape_behaves_as_in_pydantic_ai(shape: str) -> None:
    ours = run('threadline', shape)
    assert ours == run('reference', shape)
    assert ours[2] == 'done' and all(outcome == 'success' for *_, outcome in ours[1])


def test_the_run_sees_the_reshaped_names_and_the_functions_get_their_arguments() -> None:
    offered, returns, _ = run('threadline', 'prefixed')
    assert [name for name, _ in offered[0]] == ['wx_alerts', 'wx_forecast']
    assert returns[0] == ('wx_alerts', 'c1', 'no alerts in Oslo', 'success')
    offered, _, _ = run('threadline', 'filtered')
    assert [len(o) for o in offered] == [1, 2, 2]  # `alerts` joins from the second step on


def test_external_tools_end_the_run_and_resume_with_their_results() -> None:
    from threadline import DeferredToolRequests, DeferredToolResults
    from threadline.models import ToolDefinition

    def model(messages: list[Any], info: Any) -> Any:
        if len(messages) == 1:
            return our_messages.ModelResponse(parts=[our_messages.ToolCallPart('browser_click', {'x': 1}, 'e1')])
        return our_messages.ModelResponse(parts=[our_messages.TextPart(f'clicked: {messages[-1].parts[0].content}')])

    click = ToolDefinition('browser_click', {'type': 'object', 'properties': {'x': {'type': 'integer'}}})
    agent = threadline.Agent(
        FunctionModel(model),
        output_type=[str, DeferredToolRequests],
        toolsets=[our_toolsets.ExternalToolset([click])],
    )
    paused = agent.run_sync('click it')
    assert isinstance(paused.output, DeferredToolRequests)
    assert [(c.tool_name, c.args) for c in paused.output.calls] == [('browser_click', {'x': 1})]
    done = agent.run_sync(
        message_history=paused.all_messages(), deferred_tool_results=DeferredToolResults(calls={'e1': 'ok'})
    )
    assert done.output == 'clicked: ok'


def test_a_name_clash_and_a_prepare_that_adds_a_tool_are_clear_errors() -> None:
    agent = threadline.Agent(
        FunctionModel(lambda m, i: our_messages.ModelResponse(parts=[])), toolsets=[weather_tools('threadline')]
    )

    @agent.tool_plain
    def forecast(city: str) -> str:
        return 'mine'

    with pytest.raises(UserError, match="conflicts with a tool of the agent or of a capability: 'forecast'"):
        agent.run_sync('hi')

    def adds(ctx: Any, defs: list[Any]) -> list[Any]:
        return [*defs, replace(defs[0], name='extra')]

    bad = threadline.Agent(
        FunctionModel(lambda m, i: our_messages.ModelResponse(parts=[])),
        toolsets=[weather_tools('threadline').prepared(adds)],
    )
    with pytest.raises(UserError, match=r"cannot add or rename tools \(it returned \['extra'\]\)"):
        bad.run_sync('hi')


def test_toolsets_per_run_and_in_override() -> None:
    seen: list[list[str]] = []

    def model(messages: list[Any], info: Any) -> Any:
        seen.append(sorted(t.name for t in info.function_tools))
        return our_messages.ModelResponse(parts=[our_messages.TextPart('ok')])

    agent = threadline.Agent(FunctionModel(model))
    agent.run_sync('hi', toolsets=[weather_tools('threadline').prefixed('run')])
    with agent.override(toolsets=[weather_tools('threadline').prefixed('test')]):
        agent.run_sync('hi')
    agent.run_sync('hi')
    assert seen == [['run_alerts', 'run_forecast'], ['test_alerts', 'test_forecast'], []]


def test_a_toolset_that_holds_a_resource_is_entered_for_the_run() -> None:
    events: list[str] = []

    class Connected(our_toolsets.WrapperToolset[Any]):
        async def __aenter__(self) -> Any:
            events.append('open')
            return self

        async def __aexit__(self, *exc: object) -> None:
            events.append('close')

    agent = threadline.Agent(
        FunctionModel(lambda m, i: our_messages.ModelResponse(parts=[our_messages.TextPart('ok')])),
        toolsets=[Connected(weather_tools('threadline'))],
    )
    agent.run_sync('hi')
    assert events == ['open', 'close']
