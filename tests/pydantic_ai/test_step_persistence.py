"""Threadline's StepPersistence on a real pydantic-ai 2.62 Agent: the same events, snapshots as log
positions and tool ledger as on Threadline's own Agent, O(turn) writes, and the same refusal after
a crash inside a tool until the call is reconciled."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai import ModelMessagesTypeAdapter as TheirTA
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models.test import TestModel

from tests.storage.conftest import fresh_postgres_url, needs_postgres
from tests.storage.test_step_persistence import TOOL_TURN_EVENTS
from threadline.audit import reconcile_tool_call
from threadline.exceptions import UnresolvedToolEffect
from threadline.pydantic_ai import StepPersistence, from_pydantic_ai, load_history
from threadline.storage import (
    AsyncStore,
    FileStore,
    MemoryStore,
    PostgresStore,
    SQLiteStore,
    SyncStore,
    annotate_tool_effect,
    continue_run,
    inspect_recovery,
)

BACKENDS = ['memory', 'sqlite', 'file', pytest.param('postgres', marks=needs_postgres)]


def a_store(backend: str, tmp_path: Path) -> AsyncStore[SyncStore]:
    if backend == 'memory':
        return MemoryStore()
    if backend == 'sqlite':
        return SQLiteStore(tmp_path / 'steps.db')
    if backend == 'file':
        return FileStore(tmp_path / 'steps')
    return PostgresStore(fresh_postgres_url())


class ToolCrash(BaseException):
    """Stands in for the process dying inside the tool body: no error hook sees it."""


def refund_agent(store: AsyncStore[SyncStore], *capabilities: Any, crash: bool = False) -> Agent[bool, str]:
    agent = Agent(
        TestModel(), deps_type=bool, capabilities=[StepPersistence(store, scope=lambda ctx: 'acme'), *capabilities]
    )

    @agent.tool
    def issue_refund(ctx: RunContext[bool], order: str) -> str:
        annotate_tool_effect(idempotency_key=f'refund-{order}', summary=f'refund {order}')
        if crash and not ctx.deps:
            raise ToolCrash
        return f'refunded {order}'

    return agent


@pytest.mark.parametrize('backend', BACKENDS)
async def test_a_pydantic_ai_run_is_recorded_step_by_step(backend: str, tmp_path: Path) -> None:
    store = a_store(backend, tmp_path)
    result = await refund_agent(store).run('refund my order', deps=True)
    kinds = [e.kind for e in await store.list_events(result.run_id, scope='acme')]
    assert kinds == TOOL_TURN_EVENTS  # as our own Agent's run records it
    snapshots = await store.list_snapshots(result.run_id, scope='acme')
    assert [(s.position, s.state) for s in snapshots][-1] == (4, 'complete')
    [effect] = await store.tool_effects(result.run_id, scope='acme')
    assert (effect.status, effect.idempotency_key, effect.summary) == ('completed', 'refund-a', 'refund a')
    stored = await store.load(result.conversation_id, scope='acme')
    assert stored.messages == from_pydantic_ai(result.all_messages())
    raw = await store.raw_history(result.conversation_id, scope='acme')
    assert json.loads(raw) == json.loads(TheirTA.dump_json(result.all_messages()))
    [run] = await store.list_runs(result.conversation_id, scope='acme')
    assert run.status == 'completed' and run.usage is not None and run.usage.requests == result.usage.requests
    # Saving the same run again adds nothing: StepPersistence stored it.
    assert await store.save(result, scope='acme') == stored.revision


async def test_a_continued_conversation_writes_only_its_turn_and_counts_its_own_usage(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'turns.db')
    agent = refund_agent(store)
    first = await agent.run('refund order a', deps=True)
    history = await asyncio.to_thread(load_history, store, first.conversation_id, scope='acme')
    second = await agent.run('and order b', deps=True, **history.run_kwargs())
    stored = await store.load(first.conversation_id, scope='acme')
    assert stored.messages == from_pydantic_ai(second.all_messages())
    runs = await store.list_runs(first.conversation_id, scope='acme')
    assert [r.usage.requests for r in runs if r.usage] == [
        first.usage.requests,
        second.usage.requests - first.usage.requests,
    ]
    assert stored.usage.requests == second.usage.requests  # the conversation's total, counted once


async def test_after_a_crash_in_a_tool_the_call_is_unknown_until_reconciled(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'crash.db')
    agent = refund_agent(store, crash=True)
    with pytest.raises(ToolCrash):
        await agent.run('refund my order', deps=False)
    [summary] = await store.list('acme')
    [run] = await store.list_runs(summary.conversation_id, scope='acme')
    [unknown] = (await inspect_recovery(store, run.run_id, scope='acme')).unknown
    assert unknown.idempotency_key == 'refund-a'
    history = await asyncio.to_thread(load_history, store, summary.conversation_id, scope='acme')
    # pydantic-ai runs the open call again when given its history without a new prompt: refused
    # before the tool body runs, as Threadline's own Agent refuses it.
    with pytest.raises(UnresolvedToolEffect, match='issue_refund'):
        await agent.run(deps=True, **history.run_kwargs())
    with pytest.raises(UnresolvedToolEffect):
        await continue_run(store, run.run_id, scope='acme', include_interrupted=True)
    reconcile_tool_call(
        store, summary.conversation_id, unknown.tool_call_id, scope='acme', result='refunded a', evidence='psp:refund-a'
    )
    history = await asyncio.to_thread(load_history, store, summary.conversation_id, scope='acme')
    done = await agent.run('thanks', deps=True, **history.run_kwargs())
    assert done.output
    assert TheirTA.validate_json(TheirTA.dump_json(done.all_messages())) == done.all_messages()


async def test_streaming_and_iter_are_recorded_too(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'stream.db')
    agent = refund_agent(store)
    async with agent.run_stream('refund my order', deps=True) as streamed:
        await streamed.get_output()
    async with agent.iter('refund my order', deps=True) as run:
        async for _ in run:
            pass
    assert run.result is not None
    for run_id, conversation_id, messages in (
        (streamed.run_id, streamed.conversation_id, streamed.all_messages()),
        (run.result.run_id, run.result.conversation_id, run.result.all_messages()),
    ):
        [record] = [r for r in await store.list_runs(conversation_id, scope='acme') if r.run_id == run_id]
        assert record.status == 'completed'
        assert (await store.load(conversation_id, scope='acme')).messages == from_pydantic_ai(messages)


class Stamp(AbstractCapability[Any]):
    """A capability of the user's own that changes the history the run keeps."""

    async def before_run(self, ctx: RunContext[Any]) -> None:
        ctx.metadata = {'stamped': True} if ctx.metadata is None else {**ctx.metadata, 'stamped': True}


@pytest.mark.parametrize('first', [True, False])
async def test_beside_the_agents_own_capabilities_in_either_order(first: bool, tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'order.db')
    persistence = StepPersistence(store, scope='acme')
    capabilities = [persistence, Stamp()] if first else [Stamp(), persistence]
    agent = Agent(TestModel(), capabilities=capabilities)
    result = await agent.run('hello')
    assert (await store.load(result.conversation_id, scope='acme')).messages == from_pydantic_ai(result.all_messages())


async def test_another_scopes_conversation_is_not_reached(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'scopes.db')
    result = await refund_agent(store).run('refund my order', deps=True)
    assert await store.list('other-tenant') == []
    assert await store.list_events(result.run_id, scope='other-tenant') == []


async def test_a_run_is_read_back_under_the_harness_names(tmp_path: Path) -> None:
    from threadline.pydantic_ai import continue_run, fork_run, latest_snapshot, list_unresolved_tool_effects

    store = SQLiteStore(tmp_path / 'names.db')
    agent = refund_agent(store)
    result = await agent.run('refund my order', deps=True)
    snapshot = await latest_snapshot(store, result.run_id, scope='acme')
    assert snapshot is not None and snapshot.state == 'complete' and snapshot.position == 4
    assert await list_unresolved_tool_effects(store, result.run_id, scope='acme') == []
    resumed = await continue_run(store, result.run_id, scope='acme')
    assert resumed.messages == result.all_messages() and resumed.conversation_id == result.conversation_id
    forked = await fork_run(store, result.run_id, scope='acme')
    assert forked.conversation_id != result.conversation_id and forked.messages == result.all_messages()
    again = await agent.run('and order b', deps=True, **forked.run_kwargs())
    assert (await store.load(forked.conversation_id, scope='acme')).messages == from_pydantic_ai(again.all_messages())
    assert await latest_snapshot(store, result.run_id, scope='other') is None
    crashing = refund_agent(store, crash=True)
    with pytest.raises(ToolCrash):
        await crashing.run('refund order c', deps=False)
    [summary] = [
        c for c in await store.list('acme') if c.conversation_id not in (result.conversation_id, forked.conversation_id)
    ]
    [run] = await store.list_runs(summary.conversation_id, scope='acme')
    [unknown] = await list_unresolved_tool_effects(store, run.run_id, scope='acme')
    assert unknown.tool_name == 'issue_refund'
    with pytest.raises(UnresolvedToolEffect):
        await continue_run(store, run.run_id, scope='acme', include_interrupted=True)


async def test_deferred_approvals_are_recorded_and_resumed(tmp_path: Path) -> None:
    from pydantic_ai import DeferredToolRequests, DeferredToolResults
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if any(isinstance(p, ToolReturnPart) and p.tool_name == 'refund' for m in messages for p in m.parts):
            return ModelResponse(parts=[TextPart('Refunded.')])
        return ModelResponse(parts=[ToolCallPart('refund', {'order': 7}, 'call-refund')])

    store = SQLiteStore(tmp_path / 'deferred.db')
    agent = Agent(
        FunctionModel(model),
        output_type=[str, DeferredToolRequests],
        capabilities=[StepPersistence(store, scope='acme')],
    )
    refunded: list[int] = []

    @agent.tool_plain(requires_approval=True)
    def refund(order: int) -> str:
        refunded.append(order)
        return f'refunded {order}'

    paused = await agent.run('refund order 7')
    assert isinstance(paused.output, DeferredToolRequests)
    assert [c.tool_call_id for c in paused.output.approvals] == ['call-refund'] and refunded == []
    raw = await store.raw_history(paused.conversation_id, scope='acme')
    assert json.loads(raw) == json.loads(TheirTA.dump_json(paused.all_messages()))
    history = await asyncio.to_thread(load_history, store, paused.conversation_id, scope='acme')
    approved = DeferredToolResults(approvals={'call-refund': True})
    done = await agent.run(deferred_tool_results=approved, **history.run_kwargs())
    assert done.output == 'Refunded.' and refunded == [7]
    raw = await store.raw_history(paused.conversation_id, scope='acme')
    assert json.loads(raw) == json.loads(TheirTA.dump_json(done.all_messages()))
    effects = {e.tool_name: e.status for e in await store.tool_effects(done.run_id, scope='acme')}
    assert effects == {'refund': 'completed'}


async def test_what_a_tool_enqueues_is_stored_where_the_run_put_it(tmp_path: Path) -> None:
    from pydantic_ai.messages import UserPromptPart

    store = SQLiteStore(tmp_path / 'enqueue.db')
    agent = Agent(TestModel(), capabilities=[StepPersistence(store, scope='acme')])

    @agent.tool
    def note(ctx: RunContext[None]) -> str:
        ctx.enqueue(UserPromptPart('(the note tool ran)'))
        return 'noted'

    result = await agent.run('take a note')
    assert '(the note tool ran)' in TheirTA.dump_json(result.all_messages()).decode()
    raw = await store.raw_history(result.conversation_id, scope='acme')
    assert json.loads(raw) == json.loads(TheirTA.dump_json(result.all_messages()))


@pytest.mark.parametrize('backend', BACKENDS)
async def test_a_delegate_run_records_its_orchestrator_and_agent_name(backend: str, tmp_path: Path) -> None:
    store = a_store(backend, tmp_path)
    reader = Agent(TestModel(), capabilities=[StepPersistence(store, scope='acme', agent_name='reader')])
    planner = Agent(TestModel(), capabilities=[StepPersistence(store, scope='acme', agent_name='planner')])

    @planner.tool_plain
    async def ask_the_reader(question: str) -> str:
        return (await reader.run(question)).output

    top = await planner.run('plan it')
    [child] = await store.find_runs(scope='acme', parent_run_id=top.run_id)
    assert child.agent_name == 'reader' and child.conversation_id != top.conversation_id
    run = await store.get_run(top.run_id, scope='acme')
    assert run is not None and (run.agent_name, run.parent_run_id) == ('planner', None)
    assert await store.find_runs(scope='other', parent_run_id=top.run_id) == []
    later = await reader.run('on its own')  # outside any run: no parent
    alone = await store.get_run(later.run_id, scope='acme')
    assert alone is not None and alone.parent_run_id is None
