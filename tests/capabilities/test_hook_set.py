"""The full hook set: every lifecycle's before / after / error / wrap hooks, called in the same
order as pydantic-ai 2.62 calls them for the same run; `Hooks` by name and by decorator;
`CombinedCapability`, `for_run` and `for_agent`."""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic_ai
import pytest
from pydantic_ai import capabilities as ref_capabilities
from pydantic_ai import messages as ref_messages
from pydantic_ai.models.function import FunctionModel as RefFunctionModel

import threadline
from threadline import messages as our_messages
from threadline.capabilities import AbstractCapability, CombinedCapability, Hooks, HookTimeoutError
from threadline.exceptions import ModelRetry
from threadline.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from threadline.models.function import FunctionModel

LIBS = {
    'threadline': (threadline, our_messages, threadline.capabilities, FunctionModel),
    'reference': (pydantic_ai, ref_messages, ref_capabilities, RefFunctionModel),
}


def recorder(lib: str, name: str, log: list[str]) -> Any:
    """A capability of `lib` that logs each hook of the shared set as it is entered (and each
    wrap as it is left)."""
    base = LIBS[lib][2].AbstractCapability

    class Recorder(base):  # type: ignore[misc,valid-type]
        def _log(self, hook: str) -> None:
            log.append(f'{name}.{hook}')

        async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
            self._log('wrap_run')
            result = await handler()
            self._log('wrap_run done')
            return result

        async def before_run(self, ctx: Any) -> None:
            self._log('before_run')

        async def after_run(self, ctx: Any, *, result: Any) -> Any:
            self._log('after_run')
            return result

        async def wrap_node_run(self, ctx: Any, *, node: Any, handler: Any) -> Any:
            self._log(f'wrap_node_run {type(node).__name__}')
            return await handler(node)

        async def before_node_run(self, ctx: Any, *, node: Any) -> Any:
            self._log('before_node_run')
            return node

        async def after_node_run(self, ctx: Any, *, node: Any, result: Any) -> Any:
            self._log('after_node_run')
            return result

        async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
            self._log('wrap_model_request')
            return await handler(request_context)

        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            self._log('before_model_request')
            return request_context

        async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
            self._log('after_model_request')
            return response

        async def wrap_tool_validate(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            self._log('wrap_tool_validate')
            return await handler(args)

        async def before_tool_validate(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
            self._log('before_tool_validate')
            return args

        async def after_tool_validate(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
            self._log(f'after_tool_validate {sorted(args.items())}')
            return args

        async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
            self._log('wrap_tool_execute')
            return await handler(args)

        async def before_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
            self._log('before_tool_execute')
            return args

        async def after_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, result: Any) -> Any:
            self._log(f'after_tool_execute {result}')
            return result

    return Recorder()


def scripted_agent(lib: str, capabilities: list[Any], script: list[Any] | None = None) -> Any:
    """An agent of `lib` whose model answers with `script` (a list of responses' calls, None for
    the text 'done'), with one tool, `add`."""
    mod, msgs, _, model_cls = LIBS[lib]
    steps = iter(script if script is not None else [[('add', {'a': 1, 'b': 2}, 'c1')], None])

    def model(messages: list[Any], info: Any) -> Any:
        step = next(steps, None)
        if step is None:
            return msgs.ModelResponse(parts=[msgs.TextPart('done')])
        return msgs.ModelResponse(parts=[msgs.ToolCallPart(*call) for call in step])

    agent = mod.Agent(model_cls(model), capabilities=capabilities)

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    return agent


def scripted_run(lib: str, capabilities: list[Any], script: list[Any] | None = None) -> Any:
    return scripted_agent(lib, capabilities, script).run_sync('go')


def test_the_hooks_are_called_in_the_same_order_as_pydantic_ai() -> None:
    logs: dict[str, list[str]] = {}
    for lib in LIBS:
        log: list[str] = []
        result = scripted_run(lib, [recorder(lib, 'A', log), recorder(lib, 'B', log)])
        assert result.output == 'done'
        logs[lib] = log
    assert logs['threadline'] == logs['reference']
    log = logs['threadline']
    assert log[:4] == ['A.wrap_run', 'B.wrap_run', 'A.before_run', 'B.before_run']
    tool = log.index('A.wrap_tool_validate')
    assert log[tool : tool + 6] == [
        'A.wrap_tool_validate',
        'B.wrap_tool_validate',
        'A.before_tool_validate',
        'B.before_tool_validate',
        "B.after_tool_validate [('a', 1), ('b', 2)]",
        "A.after_tool_validate [('a', 1), ('b', 2)]",
    ]
    assert log[-4:] == ['B.after_run', 'A.after_run', 'B.wrap_run done', 'A.wrap_run done']


class Recovering(AbstractCapability[Any]):
    """Recovers a bad tool call's arguments, and retries a tool that fails once."""

    def __init__(self) -> None:
        self.attempts = 0

    async def on_tool_validate_error(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, error: Exception) -> Any:
        return {'a': 40, 'b': 2}

    async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
        try:
            return await handler(args)
        except RuntimeError:
            return await handler(args)  # the lifecycle runs again


def test_error_hooks_recover_and_a_wrap_can_run_its_handler_twice() -> None:
    attempts: list[int] = []
    agent = threadline.Agent(
        FunctionModel(lambda m, i: _calls(m, [('flaky', {'a': 'x'}, 'c1')])), capabilities=[Recovering()]
    )

    @agent.tool_plain
    def flaky(a: int, b: int) -> int:
        attempts.append(a)
        if len(attempts) == 1:
            raise RuntimeError('transient')
        return a + b

    result = agent.run_sync('go')
    returns = [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    assert attempts == [40, 40] and returns[0].content == 42 and returns[0].outcome == 'success'


def _calls(messages: list[Any], calls: list[Any]) -> ModelResponse:
    """The scripted calls first, then a text answer."""
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart(*call) for call in calls])
    return ModelResponse(parts=[TextPart('done')])


def test_a_model_request_wrap_may_answer_without_the_model_and_the_answer_is_recorded() -> None:
    called: list[str] = []

    class Cached(AbstractCapability[Any]):
        async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
            return ModelResponse(parts=[TextPart('from cache')])

    def model(messages: list[Any], info: Any) -> ModelResponse:
        called.append('model')
        return ModelResponse(parts=[TextPart('from model')])

    result = threadline.Agent(FunctionModel(model), capabilities=[Cached()]).run_sync('go')
    assert result.output == 'from cache' and called == []
    assert result.all_messages()[-1].parts[0].content == 'from cache'


def test_a_node_error_hook_recovers_by_naming_the_next_node() -> None:
    from threadline import End
    from threadline.agent.output._end import FinalResult

    class Fallback(AbstractCapability[Any]):
        async def on_node_run_error(self, ctx: Any, *, node: Any, error: Exception) -> Any:
            return End(FinalResult(f'recovered from {error}'))

    def model(messages: list[Any], info: Any) -> ModelResponse:
        raise ValueError('model down')

    result = threadline.Agent(FunctionModel(model), capabilities=[Fallback()]).run_sync('go')
    assert result.output == 'recovered from model down'


def test_hooks_by_name_and_by_decorator_with_a_tool_filter_and_a_timeout() -> None:
    seen: list[str] = []
    hooks = Hooks(before_model_request=lambda ctx, request_context: seen.append('request') or request_context)

    @hooks.on.tool_execute(tools=['add'])
    async def around(ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
        seen.append(f'around {call.tool_name}')
        return await handler(args)

    @hooks.on.tool_execute_error
    def never(ctx: Any, **kwargs: Any) -> Any:
        raise AssertionError('no tool failed')

    result = scripted_run('threadline', [hooks], [[('add', {'a': 1, 'b': 2}, 'c1'), ('other', {}, 'c2')], None])
    assert seen == ['request', 'around add', 'request'] and result.output == 'done'

    slow = Hooks()

    @slow.on.before_tool_execute(timeout=0.05)
    async def stall(ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
        await asyncio.sleep(5)

    with pytest.raises(HookTimeoutError, match='before_tool_execute'):
        scripted_run('threadline', [slow])
    with pytest.raises(TypeError, match="unknown hook 'befor_run'"):
        Hooks(befor_run=lambda ctx: None)


def test_a_combined_capability_counts_as_its_members_in_place() -> None:
    combined_log: list[str] = []
    listed_log: list[str] = []
    scripted_run(
        'threadline',
        [CombinedCapability([recorder('threadline', 'A', combined_log), recorder('threadline', 'B', combined_log)])],
    )
    scripted_run('threadline', [recorder('threadline', 'A', listed_log), recorder('threadline', 'B', listed_log)])
    assert combined_log == listed_log


def test_for_run_gives_each_run_its_own_instance_and_for_agent_sees_the_agent() -> None:
    class PerRun(AbstractCapability[Any]):
        made: list[PerRun] = []  # noqa: RUF012 - shared on purpose: every instance made
        agent: Any = None

        def __init__(self) -> None:
            self.calls = 0
            PerRun.made.append(self)

        def for_agent(self, agent: Any) -> Any:
            self.agent = agent
            return self

        async def for_run(self, ctx: Any) -> Any:
            fresh = PerRun()
            fresh.agent = self.agent
            return fresh

        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            self.calls += 1
            return request_context

    shared = PerRun()
    agent = threadline.Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart('ok')])), capabilities=[shared])
    assert shared.agent is agent
    agent.run_sync('one')
    agent.run_sync('two')
    assert shared.calls == 0 and [p.calls for p in PerRun.made[1:]] == [1, 1]


def test_a_model_retry_from_a_validate_hook_goes_back_to_the_model() -> None:
    class Strict(AbstractCapability[Any]):
        async def after_tool_validate(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
            if args['a'] < 0:
                raise ModelRetry('a must not be negative')
            return args

    result = scripted_run(
        'threadline', [Strict()], [[('add', {'a': -1, 'b': 2}, 'c1')], [('add', {'a': 1, 'b': 2}, 'c2')], None]
    )
    returns = [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
    assert [(r.outcome, r.content) for r in returns] == [('retried', 'a must not be negative'), ('success', 3)]


def iter_run(lib: str, capabilities: list[Any]) -> Any:
    """The scripted run driven node by node with `iter()`."""
    import asyncio

    agent = scripted_agent(lib, capabilities)

    async def drive() -> Any:
        async with agent.iter('go') as run:
            async for _ in run:
                pass
        return run.result

    return asyncio.run(drive())


def test_a_run_driven_by_iter_calls_the_hooks_as_pydantic_ai_does() -> None:
    logs = {}
    for lib in LIBS:
        log: list[str] = []
        assert iter_run(lib, [recorder(lib, 'A', log)]).output == 'done'
        logs[lib] = log
    assert logs['threadline'] == logs['reference']
    assert logs['threadline'][0] == 'A.wrap_run' and logs['threadline'][-1] == 'A.wrap_run done'


def test_wrap_run_cleanup_runs_when_the_caller_leaves_early_or_fails() -> None:
    import asyncio

    events: list[str] = []

    class Guard(AbstractCapability[Any]):
        async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
            events.append('open')
            try:
                return await handler()
            except BaseException as error:
                events.append(f'saw {type(error).__name__}')
                raise
            finally:
                events.append('closed')

    agent = threadline.Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart('ok')])), capabilities=[Guard()])

    async def leave_early() -> None:
        async with agent.iter('go') as run:
            async for _ in run:
                events.append('node')
                break

    async def fail() -> None:
        async with agent.iter('go'):
            raise KeyError('mine')

    asyncio.run(leave_early())
    assert events == ['open', 'node', 'closed']
    events.clear()
    with pytest.raises(KeyError, match='mine'):
        asyncio.run(fail())
    assert events == ['open', 'saw KeyError', 'closed']
