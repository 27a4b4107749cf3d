"""Deferred tool calls (approval and outside execution) as in pydantic-ai 2.62, one script body on
both libraries: what a deferral carries, when a call may wait, what a resumed run sends, the
results an application may hand back, and `HandleDeferredToolCalls` in the run.

Rules (the reference's): a call waits when its tool's definition for the step says so (declared,
or set by `prepare`) or when the tool, its args validator or a tool hook raises `ApprovalRequired`
/ `CallDeferred`, and only once its arguments are valid; the metadata a deferral carries is keyed
by tool call id in `DeferredToolRequests.metadata`; results may be plain values, `ToolReturn`,
`ToolFailed` or `ModelRetry`; several handlers each answer what the ones before them left open."""

import asyncio
import json
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library

LIBS = ('ref', 'ours')


def _parts(messages: list[Any]) -> list[dict[str, Any]]:
    """Each part's kind and the fields a porting application reads, JSON-comparable."""
    out = []
    for message in messages:
        for part in message.parts:
            row: dict[str, Any] = {'kind': part.part_kind}
            for name in ('tool_name', 'tool_call_id', 'args', 'content', 'outcome', 'metadata'):
                if hasattr(part, name):
                    row[name] = getattr(part, name)
            retry = getattr(part, 'retry', None)
            if retry is not None:
                row['retry'] = [retry.cause, retry.attempt]
            out.append(row)
    return json.loads(json.dumps(out, default=repr))


def _first_calls(lib: SimpleNamespace, *calls: Any) -> Any:
    def model(messages: list[Any], info: Any) -> Any:
        if len(messages) == 1:
            return lib.ModelResponse(parts=list(calls))
        return lib.ModelResponse(parts=[lib.TextPart('done')])

    return lib.FunctionModel(model)


def _requests(output: Any) -> dict[str, Any]:
    return {
        'calls': [c.tool_call_id for c in output.calls],
        'approvals': [c.tool_call_id for c in output.approvals],
        'metadata': output.metadata,
    }


def metadata_of_deferrals(lib: SimpleNamespace, where: str) -> dict[str, Any]:
    class Hook(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def after_tool_validate(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
            if where == 'after_tool_validate' and call.tool_name == 't':
                raise lib.CallDeferred(metadata={'from': where})
            return args

        async def before_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
            if where == 'before_tool_execute' and call.tool_name == 't':
                raise lib.CallDeferred(metadata={'from': where})
            return args

    model = _first_calls(lib, lib.ToolCallPart('t', {'x': 1}, 'c1'), lib.ToolCallPart('u', {}, 'c2'))
    agent = lib.Agent(model, output_type=[str, lib.DeferredToolRequests], capabilities=[Hook()])

    def validator(ctx: Any, x: int) -> None:
        if where == 'args_validator':
            raise lib.CallDeferred(metadata={'from': where})

    @agent.tool_plain(args_validator=validator)
    def t(x: int) -> str:
        if where == 'tool':
            raise lib.CallDeferred(metadata={'from': where})
        return 'T'

    @agent.tool_plain
    def u() -> str:
        raise lib.ApprovalRequired(metadata={'from': 'u'})

    return _requests(agent.run_sync('go').output)


@pytest.mark.parametrize('where', ['tool', 'args_validator', 'after_tool_validate', 'before_tool_execute'])
def test_a_deferral_s_metadata_reaches_the_requests(where: str) -> None:
    ours, ref = (metadata_of_deferrals(library(name), where) for name in ('ours', 'ref'))
    assert ours == ref
    assert ours['metadata'] == {'c1': {'from': where}, 'c2': {'from': 'u'}}


def asks_again_after_approval(lib: SimpleNamespace) -> dict[str, Any]:
    agent = lib.Agent(_first_calls(lib, lib.ToolCallPart('u', {}, 'c1')), output_type=[str, lib.DeferredToolRequests])

    @agent.tool
    def u(ctx: lib.RunContext[None]) -> str:
        raise lib.ApprovalRequired(metadata={'approved before': ctx.tool_call_approved})

    first = agent.run_sync('go')
    again = agent.run_sync(
        message_history=first.all_messages(), deferred_tool_results=lib.DeferredToolResults(approvals={'c1': True})
    )
    return {'requests': _requests(again.output), 'new': _parts(again.new_messages())}


def test_an_approved_call_that_asks_again_waits_again() -> None:
    ours, ref = (asks_again_after_approval(library(name)) for name in LIBS)
    assert ours == ref
    assert ours['requests']['approvals'] == ['c1'] and ours['requests']['metadata'] == {'c1': {'approved before': True}}


def resumed_with_a_prompt(lib: SimpleNamespace) -> dict[str, Any]:
    sent: list[Any] = []

    def model(messages: list[Any], info: Any) -> Any:
        sent.append(_parts(messages[-1:]))
        if len(messages) == 1:
            return lib.ModelResponse(parts=[lib.ToolCallPart('e', {}, 'c1')])
        return lib.ModelResponse(parts=[lib.TextPart('done')])

    agent = lib.Agent(lib.FunctionModel(model), output_type=[str, lib.DeferredToolRequests])

    @agent.tool
    def e(ctx: lib.RunContext[None]) -> str:
        raise lib.CallDeferred

    first = agent.run_sync('go')
    resumed = agent.run_sync(
        'and now this',
        message_history=first.all_messages(),
        deferred_tool_results=lib.DeferredToolResults(calls={'c1': 'E'}),
    )
    return {'sent': sent, 'new': _parts(resumed.new_messages()), 'output': resumed.output}


def test_a_prompt_given_with_deferred_results_is_sent_after_them() -> None:
    ours, ref = (resumed_with_a_prompt(library(name)) for name in LIBS)
    assert ours == ref
    assert [p['kind'] for p in ours['sent'][-1]] == ['tool-return', 'user-prompt']


def outside_result(lib: SimpleNamespace, kind: str) -> dict[str, Any]:
    seen: list[Any] = []
    agent = lib.Agent(_first_calls(lib, lib.ToolCallPart('e', {}, 'c1')), output_type=[str, lib.DeferredToolRequests])

    @agent.tool
    def e(ctx: lib.RunContext[None]) -> str:
        raise lib.CallDeferred

    first = agent.run_sync('go')
    value = {
        'a plain value': {'rows': 3},
        'ToolFailed': lib.ToolFailed('the service is gone'),
        'ToolReturn': lib.ToolReturn('value', metadata={'m': 1}),
        'ToolReturn with content': lib.ToolReturn('value', content='look at this'),
        'ModelRetry': lib.ModelRetry('try again'),
    }[kind]
    resumed = agent.run_sync(
        message_history=first.all_messages(), deferred_tool_results=lib.DeferredToolResults(calls={'c1': value})
    )
    seen.append(_parts(resumed.new_messages()))
    return {'new': seen, 'output': resumed.output}


@pytest.mark.parametrize('kind', ['a plain value', 'ToolFailed', 'ToolReturn', 'ToolReturn with content', 'ModelRetry'])
def test_an_outside_result_answers_the_call_as_in_the_reference(kind: str) -> None:
    ours, ref = (outside_result(library(name), kind) for name in LIBS)
    assert ours == ref


def prepared_to_wait(lib: SimpleNamespace, kind: str, args: dict[str, Any]) -> dict[str, Any]:
    ran: list[int] = []
    agent = lib.Agent(_first_calls(lib, lib.ToolCallPart('e', args, 'c1')), output_type=[str, lib.DeferredToolRequests])

    async def prepare(ctx: Any, tool_def: Any) -> Any:
        return replace(tool_def, kind=kind)

    @agent.tool_plain(prepare=prepare)
    def e(x: int) -> str:
        ran.append(x)
        return 'ran'

    result = agent.run_sync('go')
    output = result.output if isinstance(result.output, str) else _requests(result.output)
    return {'output': output, 'ran': ran, 'new': _parts(result.new_messages())}


@pytest.mark.parametrize('kind', ['external', 'unapproved'])
@pytest.mark.parametrize('args', [{'x': 2}, {'x': 'not a number'}], ids=['valid', 'invalid'])
def test_prepare_may_make_a_tool_wait_and_only_valid_calls_wait(kind: str, args: dict[str, Any]) -> None:
    ours, ref = (prepared_to_wait(library(name), kind, args) for name in LIBS)
    assert ours == ref
    assert ours['ran'] == []


def resolved_by_handlers(lib: SimpleNamespace) -> dict[str, Any]:
    asked: list[Any] = []

    def results_for_calls(ctx: Any, requests: Any) -> Any:
        asked.append(['calls', _requests(requests)])
        return lib.DeferredToolResults(calls={'c1': 'E1'}, metadata={'c1': {'by': 'first'}})

    def approvals(ctx: Any, requests: Any) -> Any:
        asked.append(['approvals', _requests(requests)])
        return lib.DeferredToolResults(approvals={'c2': True}, metadata={'c2': {'by': 'second'}})

    def never_asked(ctx: Any, requests: Any) -> Any:
        asked.append(['third', _requests(requests)])
        return None

    model = _first_calls(
        lib, lib.ToolCallPart('e', {}, 'c1'), lib.ToolCallPart('a', {}, 'c2'), lib.ToolCallPart('f', {}, 'c3')
    )
    handlers = [lib.HandleDeferredToolCalls(h) for h in (results_for_calls, approvals, never_asked)]
    agent = lib.Agent(model, output_type=[str, lib.DeferredToolRequests], capabilities=handlers)

    @agent.tool_plain
    def e() -> str:
        raise lib.CallDeferred(metadata={'e': 1})

    @agent.tool(requires_approval=True)
    def a(ctx: lib.RunContext[None]) -> str:
        return f'A ran with {ctx.tool_call_metadata}'

    @agent.tool_plain
    def f() -> str:
        return 'F'

    result = agent.run_sync('go')
    return {'asked': asked, 'output': result.output, 'new': _parts(result.new_messages())}


def test_several_handlers_each_answer_what_the_ones_before_left_open() -> None:
    ours, ref = (resolved_by_handlers(library(name)) for name in LIBS)
    assert ours == ref
    assert [a[0] for a in ours['asked']] == ['calls', 'approvals']


def tool_call_metadata_on_resume(lib: SimpleNamespace) -> list[Any]:
    seen: list[Any] = []
    agent = lib.Agent(_first_calls(lib, lib.ToolCallPart('a', {}, 'c1')), output_type=[str, lib.DeferredToolRequests])

    @agent.tool(requires_approval=True)
    def a(ctx: lib.RunContext[None]) -> str:
        seen.append([ctx.tool_call_approved, ctx.tool_call_metadata])
        return 'A'

    first = agent.run_sync('go')
    results = first.output.build_results(approve_all=True, metadata={'c1': {'who': 'ops'}})
    agent.run_sync(message_history=first.all_messages(), deferred_tool_results=results)
    return seen


def test_the_metadata_of_a_result_reaches_the_resumed_tool() -> None:
    ours, ref = (tool_call_metadata_on_resume(library(name)) for name in LIBS)
    assert ours == ref == [[True, {'who': 'ops'}]]


def deferral_before_validation(lib: SimpleNamespace, hook: str) -> str:
    class Early(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def before_tool_validate(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
            if hook == 'before_tool_validate':
                raise lib.ApprovalRequired
            return args

        async def wrap_tool_validate(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            if hook == 'wrap_tool_validate':
                raise lib.CallDeferred
            return await handler(args)

    agent = lib.Agent(
        _first_calls(lib, lib.ToolCallPart('t', {'x': 1}, 'c1')),
        output_type=[str, lib.DeferredToolRequests],
        capabilities=[Early()],
    )

    @agent.tool_plain
    def t(x: int) -> str:
        return 'T'

    try:
        agent.run_sync('go')
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return type(error).__name__
    return 'no error'


@pytest.mark.parametrize('hook', ['before_tool_validate', 'wrap_tool_validate'])
def test_a_deferral_before_the_arguments_are_valid_is_a_user_error(hook: str) -> None:
    ours, ref = (deferral_before_validation(library(name), hook) for name in LIBS)
    assert ours == ref == 'UserError'


async def streamed_to_a_deferral(lib: SimpleNamespace, read: str) -> list[Any]:
    async def stream(messages: list[Any], info: Any) -> Any:
        yield {0: lib.DeltaToolCall(name='e', json_args='{}', tool_call_id='c1')}

    model = lib.FunctionModel(lambda m, i: lib.ModelResponse(parts=[]), stream_function=stream)
    agent = lib.Agent(model, output_type=[str, lib.DeferredToolRequests])

    @agent.tool_plain
    def e() -> str:
        raise lib.CallDeferred

    log: list[Any] = []
    async with agent.run_stream('go') as result:
        log.append(result.is_complete)
        try:
            if read == 'stream_output':
                log.append([_requests(o) for o in [o async for o in result.stream_output()]])
            elif read == 'stream_text':
                log.append([t async for t in result.stream_text()])
            else:
                log.append(_requests(await result.get_output()))
        except Exception as error:  # noqa: BLE001 - the type is what is compared
            log.append(type(error).__name__)
        log.append(result.is_complete)
    return log


@pytest.mark.parametrize('read', ['stream_output', 'get_output', 'stream_text'])
def test_a_streamed_run_that_ends_deferred_is_complete_once_read(read: str) -> None:
    ours, ref = (asyncio.run(streamed_to_a_deferral(library(name), read)) for name in LIBS)
    assert ours == ref
    assert ours[0] is False
