"""Capabilities and hooks as in pydantic-ai 2.62, one script body on both libraries: `wrap_run`
around runs driven by `iter()` and `run_stream()` (skipping and recovering), context variables
across a run's hooks, nodes, model and tools, `ModelRetry` from model request hooks,
`wrap_model_request` around streamed requests, `for_agent` / `for_run`, sync hooks and their
timeouts, the generic classes, and what an event serializes to."""

import asyncio
import contextvars
import json
import time
from types import SimpleNamespace
from typing import Any

import pydantic
import pytest

from tests.compat._libs import library

LIBS = ('ref', 'ours')
VAR: contextvars.ContextVar[str] = contextvars.ContextVar('compat_var', default='unset')


def both(scenario: Any, *args: Any) -> tuple[Any, Any]:
    """The scenario's outcome on Threadline and on pydantic-ai, each in a fresh event loop."""
    ref, ours = (asyncio.run(scenario(library(name), *args)) for name in LIBS)
    return ours, ref


def _text_model(lib: SimpleNamespace, log: list[Any] | None = None) -> Any:
    def model(messages: list[Any], info: Any) -> Any:
        return lib.ModelResponse(parts=[lib.TextPart('hi')])

    async def stream(messages: list[Any], info: Any) -> Any:
        if log is not None:
            log.append('model-stream')
        yield 'hel'
        yield 'lo'

    return lib.FunctionModel(model, stream_function=stream)


# --- wrap_run under iter() and run_stream() ------------------------------------------------------


async def wrap_run_that_skips_or_recovers(lib: SimpleNamespace, how: str) -> Any:
    class Skip(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
            return lib.AgentRunResult(output='other')

    class Recover(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
            try:
                return await handler()
            except RuntimeError:
                return lib.AgentRunResult(output='recovered')

    agent = lib.Agent(_text_model(lib), capabilities=[Skip() if how.startswith('skip') else Recover()])
    if how == 'skip_stream':
        async with agent.run_stream('x') as streamed:
            return [await streamed.get_output(), streamed.is_complete]
    nodes: list[str] = []
    async with agent.iter('x') as run:
        async for node in run:
            nodes.append(type(node).__name__)
            if how == 'recover_iter' and len(nodes) == 2:
                raise RuntimeError('boom')
    return [nodes, run.result.output if run.result is not None else None]


@pytest.mark.parametrize('how', ['skip_iter', 'skip_stream', 'recover_iter'])
def test_wrap_run_may_skip_or_recover_a_run_the_caller_drives(how: str) -> None:
    ours, ref = both(wrap_run_that_skips_or_recovers, how)
    assert ours == ref
    assert ours[-1] in ('other', True, 'recovered')


# --- context variables ---------------------------------------------------------------------------


async def context_through_a_run(lib: SimpleNamespace, driven_by: str) -> Any:
    log: list[Any] = []
    calls = 0

    def model(messages: list[Any], info: Any) -> Any:
        nonlocal calls
        calls += 1
        log.append(('model', VAR.get()))
        if calls == 1:
            return lib.ModelResponse(parts=[lib.ToolCallPart('t', {}, 'c1')])
        return lib.ModelResponse(parts=[lib.TextPart('done')])

    async def stream(messages: list[Any], info: Any) -> Any:
        log.append(('model', VAR.get()))
        yield 'done'

    class Marks(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
            VAR.set('wrap_run')
            result = await handler()
            log.append(('wrap_run after', VAR.get()))
            return result

        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            log.append(('before_model_request', VAR.get()))
            VAR.set(f'request {calls}')
            return request_context

        async def before_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
            log.append(('before_tool_execute', VAR.get()))
            VAR.set('tool hook')
            return args

    agent = lib.Agent(lib.FunctionModel(model, stream_function=stream), capabilities=[Marks()])

    @agent.tool_plain
    def t() -> str:
        log.append(('tool', VAR.get()))
        VAR.set('tool')
        return 'ok'

    if driven_by == 'run':
        await agent.run('x')
    elif driven_by == 'iter':
        async with agent.iter('x') as run:
            async for node in run:
                log.append(('caller', type(node).__name__, VAR.get()))
    else:
        async with agent.run_stream('x') as streamed:
            await streamed.get_output()
    return [log, VAR.get()]


@pytest.mark.parametrize('driven_by', ['run', 'iter', 'run_stream'])
def test_context_variables_flow_from_wrap_run_into_the_run_and_not_out(driven_by: str) -> None:
    ours, ref = both(context_through_a_run, driven_by)
    if driven_by == 'iter':  # after_run and the End node: the reference yields End before its hooks end
        ours[0] = [e for e in ours[0] if e[:2] != ('caller', 'End')]
        ref[0] = [e for e in ref[0] if e[:2] != ('caller', 'End')]
    assert ours == ref
    assert ours[1] == 'unset'
    if driven_by != 'run_stream':  # the streamed run answers at once
        assert ('tool', 'tool hook') in ours[0] and ('before_tool_execute', 'wrap_run') in ours[0]


# --- ModelRetry from model request hooks ---------------------------------------------------------


async def model_request_hook_retries(lib: SimpleNamespace, where: str, streamed: bool) -> Any:
    calls = 0
    refused = False

    def model(messages: list[Any], info: Any) -> Any:
        nonlocal calls
        calls += 1
        return lib.ModelResponse(parts=[lib.TextPart(f'answer {calls}')])

    async def stream(messages: list[Any], info: Any) -> Any:
        nonlocal calls
        calls += 1
        yield f'answer {calls}'

    class Picky(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
            if where == 'after_model_request' and calls == 1:
                raise lib.ModelRetry('not good')
            return response

        async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
            nonlocal refused
            if where == 'wrap before the handler' and not refused:
                refused = True
                raise lib.ModelRetry('not yet')
            response = await handler(request_context)
            if where == 'wrap after the handler' and calls == 1:
                raise lib.ModelRetry('not good')
            return response

    agent = lib.Agent(lib.FunctionModel(model, stream_function=stream), capabilities=[Picky()])
    try:
        if streamed:
            async with agent.run_stream('x') as result:
                output, messages = await result.get_output(), result.all_messages()
        else:
            run = await agent.run('x')
            output, messages = run.output, run.all_messages()
    except Exception as error:  # noqa: BLE001 - the type and message are what is compared
        return [type(error).__name__, str(error)]
    shape = [
        [m.kind, [(p.part_kind, str(getattr(p, 'content', '')), getattr(getattr(p, 'retry', None), 'attempt', None))]]
        for m in messages
        for p in m.parts
    ]
    return [output, calls, shape]


@pytest.mark.parametrize('streamed', [False, True], ids=['run', 'run_stream'])
@pytest.mark.parametrize('where', ['after_model_request', 'wrap after the handler', 'wrap before the handler'])
def test_model_retry_from_a_model_request_hook_asks_the_model_again(where: str, streamed: bool) -> None:
    ours, ref = both(model_request_hook_retries, where, streamed)
    assert ours == ref
    if not streamed:
        assert ours[0] in ('answer 1', 'answer 2')


# --- wrap_model_request around streamed requests -------------------------------------------------


async def wrapped_streamed_request(lib: SimpleNamespace, how: str) -> Any:
    log: list[Any] = []

    class Around(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            log.append(('before', VAR.get()))
            VAR.set('set before the request')
            return request_context

        async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
            log.append(('after', response.parts[0].content))
            if how == 'after replaces':
                return lib.ModelResponse(parts=[lib.TextPart('after-replaced')])
            return response

        async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
            log.append('wrap in')
            if how == 'answers without the model':
                return lib.ModelResponse(parts=[lib.TextPart('canned')])
            response = await handler(request_context)
            log.append(('wrap out', response.parts[0].content))
            if how == 'wrap replaces':
                return lib.ModelResponse(parts=[lib.TextPart('replaced')])
            return response

    agent = lib.Agent(_text_model(lib, log), capabilities=[Around()])
    async with agent.run_stream('x') as streamed:
        output = await streamed.get_output()
        seen = VAR.get()
    log.append(('caller', seen))  # after the block: the reference runs the after hooks as it ends
    return [log, output, [[getattr(p, 'content', None) for p in m.parts] for m in streamed.all_messages()]]


@pytest.mark.parametrize('how', ['plain', 'answers without the model', 'wrap replaces', 'after replaces'])
def test_wrap_model_request_encloses_a_streamed_request(how: str) -> None:
    ours, ref = both(wrapped_streamed_request, how)
    assert ours == ref
    assert ours[0][0] == 'wrap in'


# --- errors under run_stream ---------------------------------------------------------------------


async def a_model_stream_that_fails(lib: SimpleNamespace) -> Any:
    log: list[Any] = []

    async def stream(messages: list[Any], info: Any) -> Any:
        raise RuntimeError('model down')
        yield 'never'

    class Watch(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def before_node_run(self, ctx: Any, *, node: Any) -> Any:
            log.append(('before_node_run', type(node).__name__))
            return node

        async def on_run_error(self, ctx: Any, *, error: BaseException) -> Any:
            log.append(('on_run_error', type(error).__name__))
            raise error

    agent = lib.Agent(lib.FunctionModel(lambda m, i: None, stream_function=stream), capabilities=[Watch()])
    try:
        async with agent.run_stream('x') as streamed:
            await streamed.get_output()
    except RuntimeError as error:
        log.append(str(error))
    return log


def test_a_model_stream_that_fails_reaches_the_run_error_hooks() -> None:
    ours, ref = both(a_model_stream_that_fails)
    assert ours == ref
    assert ('on_run_error', 'RuntimeError') in ours


# --- for_agent and for_run -----------------------------------------------------------------------


async def for_agent_and_for_run(lib: SimpleNamespace) -> Any:
    log: list[Any] = []

    class Named(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        def __init__(self, name: str) -> None:
            self.name = name

        def for_agent(self, agent: Any) -> Any:
            log.append(('for_agent', self.name))
            return self

        async def for_run(self, ctx: Any) -> Any:
            log.append(('for_run', self.name))
            return self

    agent = lib.Agent(lib.TestModel(), capabilities=[lib.CombinedCapability([Named('a'), Named('b')])])
    log.append('built')
    await agent.run('x')
    log.append('first run')
    await agent.run('x', capabilities=[Named('run-level')])
    return log


def test_for_agent_and_for_run_reach_combined_members_and_run_level_capabilities() -> None:
    ours, ref = both(for_agent_and_for_run)
    assert ours == ref
    assert ('for_agent', 'run-level') in ours


# --- sync hooks, generics, events, deferred model check ------------------------------------------


async def a_slow_sync_hook(lib: SimpleNamespace) -> Any:
    hooks = lib.Hooks()

    @hooks.on.before_model_request(timeout=0.05)
    def slow(ctx: Any, request_context: Any) -> Any:
        time.sleep(0.3)  # a sync hook runs in a thread, so its timeout can fire
        return request_context

    started = time.perf_counter()
    try:
        await lib.Agent(lib.TestModel(), capabilities=[hooks]).run('x')
    except TimeoutError as error:
        fired_early = time.perf_counter() - started < 0.25
        return [type(error).__name__, error.hook_name, error.func_name, error.timeout, fired_early]  # type: ignore[attr-defined]
    return 'no timeout'


def test_a_sync_hook_runs_in_a_thread_so_its_timeout_fires() -> None:
    ours, ref = both(a_slow_sync_hook)
    assert ours == ref
    assert ours == ['HookTimeoutError', 'before_model_request', 'slow', 0.05, True]


async def generics_and_event_json(lib: SimpleNamespace) -> Any:
    event = lib.EnqueuedMessagesEvent(enqueue_id='e1', messages=(lib.ModelRequest(parts=[lib.UserPromptPart('hi')]),))
    dumped = json.loads(pydantic.TypeAdapter(lib.EnqueuedMessagesEvent).dump_json(event))
    message = dumped['messages'][0]
    return [
        lib.ToolReturn[int](3).return_value,
        lib.CombinedCapability[int]([]).capabilities,
        sorted(dumped),
        [message['kind'], message['parts'][0]['part_kind'], message['parts'][0]['content']],
        lib.Agent('openai:gpt-4o', defer_model_check=True).model,
    ]


def test_generic_classes_event_json_and_a_deferred_model_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv('OPENAI_API_KEY', raising=False)
    ours, ref = both(generics_and_event_json)
    assert ours == ref
    assert ours[-1] == 'openai:gpt-4o'
