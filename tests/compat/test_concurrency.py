"""Concurrency limits as pydantic-ai 2.62 has them: `Agent(max_concurrency=...)` bounds the runs
under way at once, `ConcurrencyLimit(max_queued=...)` refuses a run that would wait too long in
line (`ConcurrencyLimitExceeded`), `ConcurrencyLimitedModel` bounds a model's requests, and a
task cannot wait for a slot it holds. One script body on both libraries, the results compared."""

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library_with


def _names(name: str) -> SimpleNamespace:
    return library_with(
        name,
        exceptions=('ConcurrencyLimitExceeded', 'UserError'),
        concurrency=('ConcurrencyLimit', 'ConcurrencyLimiter'),
        **{'models.concurrency': ('ConcurrencyLimitedModel', 'limit_model_concurrency')},
    )


class _Gauge:
    def __init__(self) -> None:
        self.now = self.most = 0

    async def busy(self) -> None:
        self.now += 1
        self.most = max(self.most, self.now)
        await asyncio.sleep(0.02)
        self.now -= 1


def _runs(name: str, case: str) -> list[Any]:
    lib = _names(name)
    gauge = _Gauge()

    async def answer(messages: Any, info: Any) -> Any:
        if case == 'model':
            await gauge.busy()
        return lib.ModelResponse(parts=[lib.TextPart('ok')])

    model = lib.FunctionModel(answer)
    if case == 'agent':
        agent = lib.Agent(model, max_concurrency=2)
    elif case == 'queue':
        agent = lib.Agent(model, max_concurrency=lib.ConcurrencyLimit(max_running=1, max_queued=1))
    else:
        agent = lib.Agent(lib.limit_model_concurrency(model, 1))

    @agent.tool_plain
    async def work() -> str:
        await gauge.busy()
        return 'done'

    if case != 'model':
        agent = lib.Agent(lib.TestModel(), tools=[work], max_concurrency=agent._concurrency_limiter)  # type: ignore[attr-defined]

    async def run() -> list[Any]:
        results = await asyncio.gather(*(agent.run('hi') for _ in range(5)), return_exceptions=True)
        return [type(r).__name__ if isinstance(r, Exception) else 'ok' for r in results]

    outcomes = asyncio.run(run())
    return [sorted(outcomes), gauge.most]


@pytest.mark.parametrize('case', ['agent', 'queue', 'model'])
def test_runs_and_requests_at_once(case: str) -> None:
    ours = _runs('ours', case)
    assert ours == _runs('ref', case)
    assert ours[1] == {'agent': 2, 'queue': 1, 'model': 1}[case]


def _limiter_facts(name: str) -> list[Any]:
    lib = _names(name)
    limiter = lib.ConcurrencyLimiter(2, max_queued=1, name='pool')
    facts: list[Any] = []

    async def run() -> None:
        await limiter.acquire('a')
        await limiter.acquire('b')
        facts.append(
            (limiter.running_count, limiter.available_count, limiter.waiting_count, limiter.max_running, limiter.name)
        )
        waiting = asyncio.create_task(limiter.acquire('c'))
        await asyncio.sleep(0.01)  # the waiter has queued
        facts.append(limiter.waiting_count)
        try:
            await limiter.acquire('d')
        except lib.ConcurrencyLimitExceeded as error:
            facts.append(str(error))
        limiter.release()
        await waiting
        facts.append((limiter.running_count, limiter.waiting_count))
        limiter.release()
        limiter.release()
        facts.append(limiter.available_count)

    asyncio.run(run())
    for bad in ({'max_running': 0}, {'max_running': 1, 'max_queued': -1}):
        try:
            lib.ConcurrencyLimit(**bad)
        except lib.UserError as error:
            facts.append(type(error).__name__)
    return facts


def test_a_limiters_counts_and_its_queue_bound() -> None:
    assert _limiter_facts('ours') == _limiter_facts('ref')


def _nested(name: str) -> list[str]:
    lib = _names(name)
    limiter = lib.ConcurrencyLimiter(1)
    agent = lib.Agent(lib.TestModel(call_tools=[]), max_concurrency=limiter)
    seen: list[str] = []

    async def run() -> None:
        async with agent.iter('outer'):
            try:
                await agent.run('inner, same task')
            except RuntimeError as error:
                seen.append(str(error))
        shared = lib.Agent(lib.ConcurrencyLimitedModel(lib.TestModel(), limiter), max_concurrency=limiter)
        try:
            await shared.run('agent and model on one limiter')
        except lib.UserError:
            seen.append('UserError')

    asyncio.run(run())
    return seen


def test_a_task_cannot_wait_for_a_slot_it_holds() -> None:
    ours = _nested('ours')
    assert ours == _nested('ref')
    assert len(ours) == 2
