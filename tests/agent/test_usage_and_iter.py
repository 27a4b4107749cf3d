"""Usage accounting and limits, and driving a run node by node with iter()."""

from __future__ import annotations

from typing import Any

import pytest

from threadline import (
    Agent,
    CallToolsNode,
    End,
    ModelRequestNode,
    ModelResponse,
    RequestUsage,
    RunUsage,
    TextPart,
    ToolCallPart,
    UsageLimitExceeded,
    UsageLimits,
    UserPromptNode,
)
from threadline.models.function import AgentInfo, FunctionModel
from threadline.models.test import TestModel


def fixed_usage_model(input_tokens: int = 10, output_tokens: int = 5) -> FunctionModel:
    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            parts=[TextPart('ok')], usage=RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens)
        )

    return FunctionModel(respond)


def test_run_usage_and_request_usage() -> None:
    agent = Agent(TestModel())

    @agent.tool_plain
    def t() -> str:
        return 'x'

    result = agent.run_sync('go')
    assert (result.usage.requests, result.usage.tool_calls) == (2, 1)
    responses = [m for m in result.all_messages() if isinstance(m, ModelResponse)]
    assert result.usage.input_tokens == sum(r.usage.input_tokens for r in responses)
    assert result.run_usage == result.usage


def test_usage_carried_across_runs_is_accumulated_in_place() -> None:
    agent = Agent(fixed_usage_model())
    total = RunUsage()
    r1 = agent.run_sync('a', usage=total)
    r2 = agent.run_sync('b', message_history=r1.all_messages(), usage=total)
    assert r2.usage is total and total.requests == 2 and total.input_tokens == 20
    assert r2.run_usage.requests == 1 and r2.run_usage.input_tokens == 10
    with pytest.raises(UsageLimitExceeded, match='request_limit of 2') as info:
        agent.run_sync('c', message_history=r2.all_messages(), usage=total, usage_limits=UsageLimits(request_limit=2))
    assert (info.value.limit, info.value.value) == ('request_limit', 2)


def test_tool_call_and_token_limits() -> None:
    agent = Agent(TestModel())

    @agent.tool_plain
    def t() -> str:
        return 'x'

    with pytest.raises(UsageLimitExceeded, match='tool_calls_limit of 0'):
        agent.run_sync('go', usage_limits=UsageLimits(tool_calls_limit=0))
    tokens = Agent(fixed_usage_model(100, 5))

    async def run() -> Any:
        async with tokens.iter('go', usage_limits=UsageLimits(input_tokens_limit=50)) as run:
            with pytest.raises(UsageLimitExceeded, match='input_tokens_limit of 50'):
                async for _ in run:
                    pass
            return run.all_messages()

    import asyncio

    history = asyncio.run(run())
    assert history[-1].state == 'interrupted'


async def test_iter_yields_every_node_and_next_drives_it() -> None:
    agent = Agent(TestModel())

    @agent.tool_plain
    def t() -> str:
        return 'x'

    async with agent.iter('go') as run:
        kinds = [type(node) async for node in run]
    assert kinds == [UserPromptNode, ModelRequestNode, CallToolsNode, ModelRequestNode, CallToolsNode, End]
    assert run.result is not None and run.result.output == '{"t":"x"}'
    async with agent.iter('go') as run:
        node = run.next_node
        while not isinstance(node, End):
            node = await run.next(node)
    assert run.result is not None and run.result.output == '{"t":"x"}'


async def test_async_run_and_run_sync_guard() -> None:
    from threadline import UserError

    agent = Agent(TestModel())
    assert (await agent.run('hi')).output == 'success (no tool calls)'
    with pytest.raises(UserError, match='running event loop'):
        agent.run_sync('hi')


def test_tool_loop_stops_at_request_limit() -> None:
    def loop(messages: list[Any], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart('t', {}, f'c{len(messages)}')])

    agent = Agent(FunctionModel(loop))

    @agent.tool_plain
    def t() -> str:
        return 'again'

    with pytest.raises(UsageLimitExceeded, match='request_limit of 5'):
        agent.run_sync('go', usage_limits=UsageLimits(request_limit=5))
