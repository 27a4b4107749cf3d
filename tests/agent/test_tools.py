"""Tools: schemas from signatures, validation, retries, unknown tools, deferred approval."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from threadline import (
    Agent,
    DeferredToolRequests,
    DeferredToolResults,
    ModelRequest,
    ModelResponse,
    ModelRetry,
    RunContext,
    TextPart,
    ToolCallPart,
    ToolDenied,
    ToolReturnPart,
    UnexpectedModelBehavior,
    UserError,
)
from threadline.messages import RetryFeedbackPart
from threadline.models.function import AgentInfo, FunctionModel
from threadline.models.test import TestModel


def scripted(*responses: list[Any]) -> FunctionModel:
    """A model answering with the given part lists in order (then 'done')."""
    queue = list(responses)

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=queue.pop(0) if queue else [TextPart('done')])

    return FunctionModel(respond)


def returns(result: Any) -> list[ToolReturnPart]:
    return [
        p
        for m in result.all_messages()
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]


def test_schema_from_signature_and_docstring() -> None:
    agent = Agent(TestModel())

    @agent.tool_plain
    def search(query: str, limit: int = 5, tags: list[str] | None = None) -> str:
        """Search the docs.

        Args:
            query: what to look for
            limit: how many hits
        """
        return query

    tool_def = agent.tools['search'].tool_def
    assert tool_def.description == 'Search the docs.'
    schema = tool_def.parameters_json_schema
    assert schema['required'] == ['query'] and schema['additionalProperties'] is False
    assert schema['properties']['query'] == {'type': 'string', 'description': 'what to look for'}
    assert schema['properties']['limit']['default'] == 5 and 'title' not in schema


def test_model_retry_is_stored_as_retried_return() -> None:
    attempts: list[int] = []
    agent = Agent(TestModel(), retries=2)

    @agent.tool
    def flaky(ctx: RunContext[None], x: int) -> str:
        attempts.append(ctx.retry)
        if len(attempts) == 1:
            raise ModelRetry('try again with a bigger x')
        return 'ok'

    result = agent.run_sync('go')
    first, second = returns(result)
    assert (first.outcome, first.content) == ('retried', 'try again with a bigger x')
    assert (first.retry.cause, first.retry.attempt, first.retry.max_retries) == ('model_retry', 1, 2)
    assert second.outcome == 'success' and attempts == [0, 1]


def test_bad_arguments_go_back_to_the_model_as_validation_errors() -> None:
    agent = Agent(
        scripted(
            [ToolCallPart('add', {'a': 'x'}, 'c1')],
            [ToolCallPart('add', '{"a": 1, "b": 2', 'c2')],
            [ToolCallPart('add', {'a': 1, 'b': 2}, 'c3')],
        ),
        retries=3,
    )

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    result = agent.run_sync('add')
    bad_type, bad_json, good = returns(result)
    assert bad_type.outcome == 'retried' and bad_type.retry.cause == 'validation_error'
    assert {e['loc'][0] for e in bad_type.content} == {'a', 'b'}
    assert bad_json.outcome == 'retried' and bad_json.content[0]['type'] == 'json_invalid'
    assert good.content == 3 and result.output == 'done'


def test_retries_limit_ends_the_run_with_a_clear_error() -> None:
    agent = Agent(TestModel(), retries=1)

    @agent.tool_plain
    def always_bad() -> str:
        raise ModelRetry('no')

    with pytest.raises(UnexpectedModelBehavior, match="Tool 'always_bad' exceeded max retries count of 1"):
        agent.run_sync('go')


def test_unknown_tool_becomes_a_retry() -> None:
    agent = Agent(scripted([ToolCallPart('nope', {}, 'c1')]), retries=3)

    @agent.tool_plain
    def known() -> str:
        return 'k'

    result = agent.run_sync('go')
    unknown = returns(result)[0]
    assert unknown.outcome == 'retried' and "Unknown tool name: 'nope'. Available tools: 'known'" in unknown.content


def test_a_repeated_call_id_fails_the_step_before_any_tool_runs() -> None:
    agent = Agent(scripted([ToolCallPart('known', {}, 'c2'), ToolCallPart('known', {}, 'c2')]))
    ran: list[str] = []

    @agent.tool_plain
    def known() -> str:
        ran.append('k')
        return 'k'

    with pytest.raises(UnexpectedModelBehavior, match=r"duplicate `tool_call_id`s: \['c2'\]"):
        agent.run_sync('go')
    assert ran == []


def test_tool_exception_fails_the_run() -> None:
    agent = Agent(TestModel())

    @agent.tool_plain
    def broken() -> str:
        raise RuntimeError('disk on fire')

    with pytest.raises(RuntimeError, match='disk on fire'):
        agent.run_sync('go')


def test_deferred_approval_pauses_and_resumes_as_a_new_run() -> None:
    agent = Agent(TestModel(), output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        return f'deleted {path}'

    paused = agent.run_sync('delete it')
    assert isinstance(paused.output, DeferredToolRequests)
    [call] = paused.output.approvals
    assert isinstance(paused.all_messages()[-1], ModelResponse)
    resumed = agent.run_sync(
        message_history=paused.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: True}),
    )
    assert resumed.conversation_id == paused.conversation_id and resumed.run_id != paused.run_id
    assert resumed.new_messages()[0].parts[0].content == 'deleted a'
    assert resumed.output == '{"delete_file":"deleted a"}'
    denied = agent.run_sync(
        message_history=paused.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: ToolDenied('not today')}),
    )
    assert returns(denied)[0].outcome == 'denied' and returns(denied)[0].content == 'not today'
    with pytest.raises(UserError, match='already executed'):
        agent.run_sync(
            message_history=[*paused.all_messages(), resumed.new_messages()[0]],
            deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: True}),
        )


def test_deferred_without_output_type_is_a_user_error() -> None:
    agent = Agent(TestModel())

    @agent.tool_plain(requires_approval=True)
    def risky() -> str:
        return 'x'

    with pytest.raises(UserError, match='DeferredToolRequests is not among the output types'):
        agent.run_sync('go')


class Person(BaseModel):
    name: str
    age: int


def test_structured_output_through_the_output_tool() -> None:
    result = Agent(TestModel(custom_output_args={'name': 'Ann', 'age': 3}), output_type=Person).run_sync('x')
    assert result.output == Person(name='Ann', age=3)
    assert result.all_messages()[-1].parts[0].content == 'Final result processed.'
    assert Agent(TestModel(), output_type=int).run_sync('x').output == 0
    bad = Agent(
        scripted(
            [ToolCallPart('final_result', {'name': 'A'}, 'o1')],
            [ToolCallPart('final_result', {'name': 'A', 'age': 1}, 'o2')],
        ),
        output_type=Person,
    )
    assert bad.run_sync('x').output == Person(name='A', age=1)


def test_output_validator_retry_is_retry_feedback() -> None:
    agent = Agent(scripted([TextPart('bad')], [TextPart('good')]))

    @agent.output_validator
    def check(output: str) -> str:
        if output == 'bad':
            raise ModelRetry('output must not be "bad"')
        return output

    result = agent.run_sync('go')
    assert result.output == 'good'
    feedback = result.all_messages()[2].parts[0]
    assert isinstance(feedback, RetryFeedbackPart) and feedback.retry.cause == 'model_retry'


def test_function_model_receives_rendered_feedback() -> None:
    seen: list[Any] = []

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart('bad' if len(seen) == 1 else 'good')])

    agent = Agent(FunctionModel(respond))
    agent.output_validator(lambda out: (_ for _ in ()).throw(ModelRetry('no bad')) if out == 'bad' else out)
    agent.run_sync('go')
    last = seen[1][-1].parts[0]
    assert last.part_kind == 'user-prompt' and last.content.endswith('<retry_feedback>\nno bad\n</retry_feedback>')


async def test_when_a_parallel_tool_raises_its_slow_sibling_is_cancelled() -> None:
    """The run fails with the first tool's error at once, and no sibling keeps running after it."""
    import asyncio
    import time

    log: list[str] = []
    agent = Agent(TestModel())

    @agent.tool_plain
    async def boom() -> str:
        await asyncio.sleep(0.02)
        raise RuntimeError('boom')

    @agent.tool_plain
    async def slow() -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            log.append('slow cancelled')
            raise
        log.append('slow finished')
        return 'slow'

    started = time.monotonic()
    with pytest.raises(RuntimeError, match='boom'):
        await agent.run('go')
    assert log == ['slow cancelled'] and time.monotonic() - started < 4
