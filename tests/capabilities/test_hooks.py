"""Capability hooks: a recorder sees every hook of a run; Hooks() builds one from functions."""

from __future__ import annotations

from typing import Any

import pytest

from threadline import Agent, ModelRequest, ModelResponse, RunContext, TextPart, UserPromptPart
from threadline.capabilities import AbstractCapability, Hooks, ModelRequestContext
from threadline.models.function import AgentInfo, FunctionModel
from threadline.models.test import TestModel


class Recorder(AbstractCapability):
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    async def before_run(self, ctx: RunContext[Any]) -> None:
        self.calls.append(('before_run', ctx.run_id))

    async def after_run(self, ctx: RunContext[Any], *, result: Any) -> Any:
        self.calls.append(('after_run', result.output))
        return result

    async def after_node_run(self, ctx: RunContext[Any], *, node: Any, result: Any) -> Any:
        self.calls.append(('after_node_run', type(node).__name__, type(result).__name__))
        return result

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        self.calls.append(('before_model_request', len(request_context.messages)))
        return request_context

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: Any, response: ModelResponse
    ) -> ModelResponse:
        self.calls.append(('after_model_request', [p.part_kind for p in response.parts]))
        return response

    async def before_tool_execute(self, ctx: RunContext[Any], *, call: Any, tool_def: Any, args: Any) -> Any:
        self.calls.append(('before_tool_execute', call.tool_name, call.tool_call_id, args))
        return args

    async def after_tool_execute(
        self, ctx: RunContext[Any], *, call: Any, tool_def: Any, args: Any, result: Any
    ) -> Any:
        self.calls.append(('after_tool_execute', call.tool_name, result))
        return result

    async def on_tool_execute_error(
        self, ctx: RunContext[Any], *, call: Any, tool_def: Any, args: Any, error: Exception
    ) -> Any:
        self.calls.append(('on_tool_execute_error', call.tool_name, str(error)))
        raise error

    async def on_model_request_error(
        self, ctx: RunContext[Any], *, request_context: Any, error: Exception
    ) -> ModelResponse:
        self.calls.append(('on_model_request_error', str(error)))
        raise error

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> Any:
        self.calls.append(('on_run_error', type(error).__name__))
        raise error


def test_recorder_sees_every_hook_of_a_run_with_a_tool() -> None:
    recorder = Recorder()
    agent = Agent(TestModel(), capabilities=[recorder])

    @agent.tool_plain
    def lookup(order: str) -> str:
        return f'order {order} shipped'

    result = agent.run_sync('where is my order?')
    assert recorder.calls == [
        ('before_run', result.run_id),
        ('after_node_run', 'UserPromptNode', 'ModelRequestNode'),
        ('before_model_request', 1),
        ('after_model_request', ['tool-call']),
        ('after_node_run', 'ModelRequestNode', 'CallToolsNode'),
        ('before_tool_execute', 'lookup', 'pyd_ai_tool_call_id__lookup', {'order': 'a'}),
        ('after_tool_execute', 'lookup', 'order a shipped'),
        ('after_node_run', 'CallToolsNode', 'ModelRequestNode'),
        ('before_model_request', 3),
        ('after_model_request', ['text']),
        ('after_node_run', 'ModelRequestNode', 'CallToolsNode'),
        ('after_node_run', 'CallToolsNode', 'End'),
        ('after_run', '{"lookup":"order a shipped"}'),
    ]


def test_error_hooks_fire_and_errors_propagate() -> None:
    recorder = Recorder()
    agent = Agent(TestModel(), capabilities=[recorder])

    @agent.tool_plain
    def broken() -> str:
        raise ValueError('boom')

    with pytest.raises(ValueError, match='boom'):
        agent.run_sync('go')
    assert ('on_tool_execute_error', 'broken', 'boom') in recorder.calls
    assert recorder.calls[-1] == ('on_run_error', 'ValueError')

    def failing(messages: list[Any], info: AgentInfo) -> ModelResponse:
        raise ConnectionError('provider down')

    recorder2 = Recorder()
    with pytest.raises(ConnectionError):
        Agent(FunctionModel(failing), capabilities=[recorder2]).run_sync('go')
    assert ('on_model_request_error', 'provider down') in recorder2.calls


def test_recovering_a_tool_error_records_a_failed_result() -> None:
    agent = Agent(TestModel(), capabilities=[Hooks(on_tool_execute_error=lambda ctx, **kw: f'failed: {kw["error"]}')])

    @agent.tool_plain
    def broken() -> str:
        raise ValueError('boom')

    result = agent.run_sync('go')
    tool_return = result.all_messages()[2].parts[0]
    assert (tool_return.outcome, tool_return.content) == ('failed', 'failed: boom')


def test_before_run_can_refuse_a_run() -> None:
    class Refuse(AbstractCapability):
        async def before_run(self, ctx: RunContext[Any]) -> None:
            raise PermissionError('not allowed to resume this history')

    with pytest.raises(PermissionError, match='not allowed'):
        Agent(TestModel(), capabilities=[Refuse()]).run_sync('go')


def test_hooks_replacing_request_messages_changes_only_what_is_sent() -> None:
    seen: list[Any] = []

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart('ok')])

    async def only_last(ctx: RunContext[Any], request_context: ModelRequestContext) -> ModelRequestContext:
        request_context.messages = request_context.messages[-1:]
        return request_context

    history = [ModelRequest(parts=[UserPromptPart('old')]), ModelResponse(parts=[TextPart('old answer')])]
    result = Agent(FunctionModel(respond), capabilities=[Hooks(before_model_request=only_last)]).run_sync(
        'new', message_history=history
    )
    assert len(seen[0]) == 1 and seen[0][0].parts[0].content == 'new'
    assert len(result.all_messages()) == 4  # stored history is untouched


def test_hooks_rejects_unknown_names_and_accepts_sync_functions() -> None:
    with pytest.raises(TypeError, match='unknown hook'):
        Hooks(before_everything=lambda ctx: None)
    seen: list[str] = []
    Agent(TestModel(), capabilities=[Hooks(before_run=lambda ctx: seen.append(ctx.run_id))]).run_sync('x')
    assert len(seen) == 1
