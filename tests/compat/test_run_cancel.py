"""Stopping a run from the application, as pydantic-ai 2.62 does: `AgentRun.cancel()`,
`RunContext.cancel()` and `timeout=` end the run with `RunCancelled` / `RunTimedOut`, which carry
what the run completed (a history a new run resumes from); a cancellation from outside still
raises `CancelledError`. One script body on both libraries, the results compared."""

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library_with

LIBS = ('ref', 'ours')


def _names(name: str) -> SimpleNamespace:
    return library_with(name, exceptions=('RunCancelled', 'RunTimedOut'))


def _shape(messages: list[Any]) -> list[Any]:
    return [
        [m.kind, getattr(m, 'state', None), [(p.part_kind, getattr(p, 'outcome', None)) for p in m.parts]]
        for m in messages
    ]


def _agent(lib: SimpleNamespace, slow_tool: Any) -> Any:
    def answer(messages: Any, info: Any) -> Any:
        if len(messages) == 1:
            return lib.ModelResponse(parts=[lib.ToolCallPart('slow', {}, 'c1'), lib.ToolCallPart('fast', {}, 'c2')])
        return lib.ModelResponse(parts=[lib.TextPart('done')])

    agent = lib.Agent(lib.FunctionModel(answer))
    agent.tool(slow_tool, name='slow')

    @agent.tool_plain
    async def fast() -> str:
        return 'fast'

    return agent


async def _sleeps(ctx: Any) -> str:
    if ctx.deps == 'none':  # a resumed run: answers at once
        return 'slow'
    await asyncio.sleep(0.05 if ctx.deps == 'cancel' else 5)
    if ctx.deps == 'cancel':
        ctx.cancel()
        await asyncio.sleep(5)
    return 'slow'


def _stopped(name: str, how: str) -> tuple[Any, ...]:
    lib = _names(name)
    _sleeps.__annotations__['ctx'] = lib.RunContext[str]
    agent = _agent(lib, _sleeps)

    async def run() -> tuple[Any, ...]:
        await agent.run(
            'warm up', deps='none', model=lib.TestModel(call_tools=[])
        )  # first-use imports out of the timing
        try:
            if how == 'timeout':
                await agent.run('hi', deps='sleep', timeout=0.3)
            elif how == 'ctx.cancel':
                await agent.run('hi', deps='cancel')
            else:
                async with agent.iter('hi', deps='sleep') as agent_run:
                    async for node in agent_run:
                        if agent.is_call_tools_node(node):
                            agent_run.cancel()
        except lib.RunCancelled as error:
            resumed = await agent.run(None, deps='none', message_history=error.all_messages())
            return (
                type(error).__name__,
                isinstance(error, TimeoutError),
                _shape(error.all_messages()),
                len(error.new_messages()),
                error.usage.requests,
                error.run_id is not None and error.conversation_id is not None,
                resumed.output,
            )
        return ('not stopped',)

    return asyncio.run(run())


@pytest.mark.parametrize('how', ['timeout', 'ctx.cancel', 'run.cancel'])
def test_a_stopped_run_keeps_what_it_completed(how: str) -> None:
    ours = _stopped('ours', how)
    assert ours == _stopped('ref', how)
    assert ours[0] == ('RunTimedOut' if how == 'timeout' else 'RunCancelled') and ours[-1] == 'done'


def _outside(name: str) -> list[str]:
    lib = _names(name)
    _sleeps.__annotations__['ctx'] = lib.RunContext[str]
    agent = _agent(lib, _sleeps)
    seen: list[str] = []

    async def run() -> None:
        task = asyncio.create_task(agent.run('hi', deps='sleep', timeout=10))
        await asyncio.sleep(0.1)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            seen.append('CancelledError')
        async with agent.iter('hi', deps='none', model=lib.TestModel(call_tools=[])) as agent_run:
            async for _ in agent_run:
                pass
        agent_run.cancel()  # after the block: a no-op
        seen.append(str(agent_run.result.output))

    asyncio.run(run())
    return seen


def test_a_cancellation_from_outside_stays_a_cancelled_error() -> None:
    assert _outside('ours') == _outside('ref')


def test_a_timeout_must_be_positive_and_a_nested_run_keeps_the_sooner_deadline() -> None:
    from threadline import Agent, RunContext
    from threadline.exceptions import RunTimedOut, UserError
    from threadline.models.test import TestModel

    with pytest.raises(UserError, match='timeout must be a positive number of seconds'):
        Agent(TestModel()).run_sync('hi', timeout=0)
    seen: dict[str, Any] = {}

    def peek(ctx: RunContext[None]) -> str:
        seen['inner'] = ctx.deadline
        return 'peeked'

    inner = Agent(TestModel(), tools=[peek])

    async def nested(ctx: RunContext[None]) -> str:
        seen['outer'] = ctx.deadline
        await inner.run('inner', timeout=60)  # cannot extend the outer run's deadline
        await asyncio.sleep(5)
        return 'never'

    outer = Agent(TestModel(), tools=[nested])
    with pytest.raises(RunTimedOut):
        outer.run_sync('outer', timeout=0.5)
    assert seen['outer'] is not None and abs((seen['inner'] - seen['outer']).total_seconds()) < 0.05


def test_a_stopped_runs_error_pickles_with_its_history() -> None:
    import pickle

    from threadline.exceptions import ModelRequestTimeout, RunTimedOut
    from threadline.messages import ModelRequest, UserPromptPart

    history = [ModelRequest(parts=[UserPromptPart('hi')])]
    error = RunTimedOut('late', messages=history, run_id='r', conversation_id='c')
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is RunTimedOut and isinstance(back, TimeoutError)
    assert back.all_messages() == history and back.run_id == 'r' and str(back) == 'late'
    timeout = pickle.loads(pickle.dumps(ModelRequestTimeout('m', 1.5)))
    assert (timeout.model_name, timeout.timeout, str(timeout)) == (
        'm',
        1.5,
        "Request to model 'm' timed out after 1.5 seconds",
    )
