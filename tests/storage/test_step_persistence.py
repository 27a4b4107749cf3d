"""StepPersistence records runs as they go: events, snapshots (log positions), the tool ledger."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from threadline import Agent, ModelMessage, ModelRequest, ModelResponse, RunContext, TextPart
from threadline.capabilities import ProcessHistory
from threadline.models.test import TestModel
from threadline.storage import (
    FileStore,
    MemoryStore,
    SQLiteStore,
    StepPersistence,
    ToolEffect,
    annotate_tool_effect,
    continue_run,
    fork_run,
    inspect_recovery,
)


@pytest.fixture(params=['memory', 'sqlite', 'file'])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    if request.param == 'memory':
        return MemoryStore()
    if request.param == 'sqlite':
        return SQLiteStore(tmp_path / 'steps.db')
    return FileStore(tmp_path / 'files')


TOOL_TURN_EVENTS = [
    'run_started',
    'model_request_started',
    'model_request_completed',
    'tool_call_started',
    'tool_call_completed',
    'model_request_started',
    'model_request_completed',
    'run_completed',
]
"""The events of a run that calls one tool, then answers."""


def support_agent(store: Any, **kwargs: Any) -> Agent[Any, Any]:
    agent = Agent(TestModel(), capabilities=[StepPersistence(store, scope='acme'), *kwargs.pop('extra', [])], **kwargs)

    @agent.tool
    def issue_refund(ctx: RunContext[Any], order: str) -> str:
        annotate_tool_effect(ctx, idempotency_key=f'refund-{order}', summary=f'refund {order}')
        return f'refunded {order}'

    return agent


async def test_a_run_is_recorded_step_by_step(store: Any) -> None:
    result = await support_agent(store).run('refund my order')
    kinds = [e.kind for e in await store.list_events(result.run_id, scope='acme')]
    assert kinds == TOOL_TURN_EVENTS
    snapshots = await store.list_snapshots(result.run_id, scope='acme')
    assert [(s.position, s.state) for s in snapshots] == [
        (1, 'complete'),  # with the prompt, so a crash during the first request is resumable
        (2, 'interrupted'),
        # TestModel answers before the loop gets to the tools' answers, which go behind the next
        # request: the last write carries them, and its snapshot takes the place of theirs at 3
        # (tests/storage/test_step_syncs.py has a model that takes its time, and both snapshots)
        (4, 'complete'),
    ]
    [effect] = await store.tool_effects(result.run_id, scope='acme')
    assert (effect.status, effect.idempotency_key, effect.summary) == ('completed', 'refund-a', 'refund a')
    stored = await store.load(result.conversation_id, scope='acme')
    assert stored.messages == result.all_messages() and stored.usage.requests == 2
    assert await store.save(result, scope='acme') == stored.revision  # saving the same run adds nothing
    assert (await store.load(result.conversation_id, scope='acme')).length == 4
    [run] = await store.list_runs(result.conversation_id, scope='acme')
    assert run.status == 'completed' and run.usage.requests == 2


async def test_continue_fork_and_inspect(store: Any) -> None:
    agent = support_agent(store)
    first = await agent.run('refund my order')
    resumed = await continue_run(store, first.run_id, scope='acme')
    assert resumed.messages == first.all_messages()
    second = await agent.run('thanks', **resumed.run_kwargs())
    assert second.conversation_id == first.conversation_id
    assert (await store.load(first.conversation_id, scope='acme')).length == 6
    forked = await fork_run(store, first.run_id, scope='acme')
    assert forked.conversation_id != first.conversation_id and forked.shared_prefix == 4
    branch = await agent.run('another question', **forked.run_kwargs())
    assert branch.conversation_id == forked.conversation_id
    inspection = await inspect_recovery(store, first.run_id, scope='acme')
    assert inspection.unknown == [] and [e.tool_name for e in inspection.completed] == ['issue_refund']
    assert inspection.latest_settled is not None and inspection.latest_settled.position == 4


async def test_a_run_that_fails_mid_tool_leaves_an_unknown_effect_and_an_interrupted_snapshot(store: Any) -> None:
    agent = Agent(TestModel(), capabilities=[StepPersistence(store, scope='acme')])

    class Crash(BaseException):
        """Stands in for the process dying inside the tool body: no error hook sees it."""

    @agent.tool
    def charge(ctx: RunContext[Any], amount: int) -> str:
        annotate_tool_effect(ctx, idempotency_key='charge-42')
        raise Crash

    with pytest.raises(Crash):
        await agent.run('charge me')
    run = (await store.list_runs((await store.list('acme'))[0].conversation_id, scope='acme'))[0]
    inspection = await inspect_recovery(store, run.run_id, scope='acme')
    assert [(e.tool_name, e.idempotency_key, e.status) for e in inspection.unknown] == [
        ('charge', 'charge-42', 'started')
    ]
    assert inspection.latest is not None and inspection.latest.state == 'interrupted'


async def test_compaction_by_a_processor_is_stored_as_a_branch(store: Any) -> None:

    def keep_last_request(messages: list[ModelMessage]) -> list[ModelMessage]:
        return [m for m in messages if isinstance(m, ModelRequest)][-1:]

    agent = support_agent(store)
    first = await agent.run('refund my order')
    compacting = Agent(
        TestModel(), capabilities=[StepPersistence(store, scope='acme'), ProcessHistory(keep_last_request)]
    )
    stored = await store.load(first.conversation_id, scope='acme')
    second = await compacting.run('short please', **stored.run_kwargs())
    after = await store.load(first.conversation_id, scope='acme')
    assert after.messages == second.all_messages()
    branches = store.sync.branches(first.conversation_id, scope='acme')
    # the old tip (run 1 plus run 2's prompt, stored before the processor ran) stays reachable
    assert len(branches) == 2 and branches[0][1] == 5
    snapshot = (await store.list_snapshots(second.run_id, scope='acme'))[-1]
    assert snapshot.branch_id == branches[-1][0]


class ToolCrash(BaseException):
    """Stands in for the process dying inside the tool body: no error hook sees it."""


def crashing_agent(store: Any, **options: Any) -> Agent[Any, str]:
    agent = Agent(TestModel(), capabilities=[StepPersistence(store, scope='acme', **options)])

    @agent.tool
    def charge(ctx: RunContext[Any], amount: int) -> str:
        annotate_tool_effect(ctx, idempotency_key='charge-42')
        if not ctx.deps:
            raise ToolCrash
        return 'charged'

    return agent


async def test_after_a_crash_in_a_tool_nothing_reruns_it_until_it_is_reconciled(store: Any) -> None:
    from threadline.audit import reconcile_tool_call
    from threadline.exceptions import UnresolvedToolEffect

    agent = crashing_agent(store)
    with pytest.raises(ToolCrash):
        await agent.run('charge me')
    [summary] = await store.list('acme')
    [run] = await store.list_runs(summary.conversation_id, scope='acme')
    stored = await store.load(summary.conversation_id, scope='acme')
    with pytest.raises(UnresolvedToolEffect, match=r'charge.*charge-42.*reconcile_tool_call'):
        await agent.run('try again', deps=True, **stored.run_kwargs())
    with pytest.raises(UnresolvedToolEffect):
        await continue_run(store, run.run_id, scope='acme', include_interrupted=True)
    [effect] = (await inspect_recovery(store, run.run_id, scope='acme')).unknown
    reconcile_tool_call(
        store, summary.conversation_id, effect.tool_call_id, scope='acme', result='charged', evidence='psp:charge-42'
    )
    assert (await inspect_recovery(store, run.run_id, scope='acme')).unknown == []
    resumed = await continue_run(store, run.run_id, scope='acme', include_interrupted=True)
    stored = await store.load(summary.conversation_id, scope='acme')
    done = await agent.run('thanks', deps=True, **stored.run_kwargs())
    assert done.output and resumed.conversation_id == summary.conversation_id


async def test_opting_out_lets_an_idempotent_tool_run_again(store: Any) -> None:
    agent = crashing_agent(store)
    with pytest.raises(ToolCrash):
        await agent.run('charge me')
    [summary] = await store.list('acme')
    stored = await store.load(summary.conversation_id, scope='acme')
    relaxed = crashing_agent(store, allow_unknown_effects=True)
    assert (await relaxed.run(deps=True, **stored.run_kwargs())).output  # runs the open call again


async def test_a_crash_during_the_first_model_request_keeps_the_prompt_resumable(store: Any) -> None:
    class Crash(BaseException):
        pass

    def die(messages: list[ModelMessage], info: Any) -> ModelResponse:
        raise Crash

    from threadline.models.function import FunctionModel

    agent = Agent(FunctionModel(die), capabilities=[StepPersistence(store, scope='acme')])
    with pytest.raises(Crash):
        await agent.run('hello')
    [summary] = await store.list('acme')
    [run] = await store.list_runs(summary.conversation_id, scope='acme')
    resumed = await continue_run(store, run.run_id, scope='acme')
    assert resumed.conversation_id == summary.conversation_id and resumed.length == 1
    [prompt] = resumed.messages
    assert isinstance(prompt, ModelRequest) and prompt.parts[-1].content == 'hello'


async def test_a_quarantined_conversation_refuses_runs_and_appends_until_released(store: Any) -> None:
    from threadline.audit import release_quarantine
    from threadline.exceptions import ConversationQuarantined

    agent = support_agent(store)
    first = await agent.run('refund my order')
    store.sync.quarantine(first.conversation_id, scope='acme', report={'verdict': 'UNTRUSTED_HISTORY'})
    stored = await store.load(first.conversation_id, scope='acme')
    with pytest.raises(ConversationQuarantined, match='release_quarantine'):
        await agent.run('again', **stored.run_kwargs())
    with pytest.raises(ConversationQuarantined):
        store.sync.append(first.conversation_id, stored.messages[:1], scope='acme')
    assert (await store.load(first.conversation_id, scope='acme')).length == stored.length
    release_quarantine(store, first.conversation_id, scope='acme', reason='ticket-7')
    assert [e.kind for e in store.sync.audit_events(first.conversation_id, scope='acme')][-1] == 'quarantine_released'
    later = await agent.run('again', **(await store.load(first.conversation_id, scope='acme')).run_kwargs())
    assert later.conversation_id == first.conversation_id


async def test_a_run_over_a_stale_history_is_refused_not_stored_on_top(store: Any) -> None:
    from threadline.exceptions import ConflictError

    agent = support_agent(store)
    first = await agent.run('refund my order')
    loaded = await store.load(first.conversation_id, scope='acme')  # both sessions load here
    await agent.run('first session', **loaded.run_kwargs())
    before = await store.load(first.conversation_id, scope='acme')
    with pytest.raises(ConflictError, match='another writer'):
        await agent.run('second session, stale', **loaded.run_kwargs())
    after = await store.load(first.conversation_id, scope='acme')
    assert after.messages == before.messages and after.revision == before.revision


async def test_a_refused_start_never_reaches_the_model(store: Any) -> None:
    """The run start's read goes behind the run's setup, but every refusal still comes before the
    first model request: a stale history, a quarantined conversation, an unresolved tool call."""
    from threadline.exceptions import ConflictError, ConversationQuarantined, UnresolvedToolEffect
    from threadline.models.function import FunctionModel

    calls: list[int] = []

    def model(messages: list[ModelMessage], info: Any) -> ModelResponse:
        calls.append(len(messages))
        return ModelResponse(parts=[TextPart('hello')])

    agent = Agent(FunctionModel(model), capabilities=[StepPersistence(store, scope='acme')])
    first = await agent.run('hi')
    loaded = await store.load(first.conversation_id, scope='acme')
    await agent.run('again', **loaded.run_kwargs())
    calls.clear()
    with pytest.raises(ConflictError):
        await agent.run('stale', **loaded.run_kwargs())
    effect = ToolEffect('r-x', 'call-x', 'charge', 'started', datetime.now(tz=UTC))
    store.sync.record_tool_effect(effect, conversation_id=first.conversation_id, scope='acme')
    current = await store.load(first.conversation_id, scope='acme')
    with pytest.raises(UnresolvedToolEffect, match='call-x'):
        await agent.run('unresolved', **current.run_kwargs())
    store.sync.quarantine(first.conversation_id, scope='acme', report={'verdict': 'UNTRUSTED_HISTORY'})
    with pytest.raises(ConversationQuarantined):
        await agent.run('quarantined', **current.run_kwargs())
    assert calls == []
    assert (await store.load(first.conversation_id, scope='acme')).revision == current.revision


async def test_a_tool_approved_before_any_model_request_is_in_the_ledger_first(store: Any) -> None:
    """A run resumed with approvals runs the tool before its first model request: the ledger row
    `started` is written before the tool body all the same."""
    from threadline import DeferredToolRequests, DeferredToolResults

    seen: list[list[str]] = []
    agent = Agent(
        TestModel(), output_type=[str, DeferredToolRequests], capabilities=[StepPersistence(store, scope='acme')]
    )

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        [summary] = store.sync.list('acme')
        seen.append([e.status for e in store.sync.tool_effects_for_conversation(summary.conversation_id, scope='acme')])
        return f'deleted {path}'

    paused = await agent.run('delete it')
    assert isinstance(paused.output, DeferredToolRequests)
    [call] = paused.output.approvals
    stored = await store.load(paused.conversation_id, scope='acme')
    resumed = await agent.run(
        deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: True}), **stored.run_kwargs()
    )
    assert seen == [['started']]
    [effect] = await store.tool_effects(resumed.run_id, scope='acme')
    assert (effect.tool_call_id, effect.status) == (call.tool_call_id, 'completed')


async def test_continue_and_fork_carry_a_snapshots_unsent_messages(store: Any) -> None:
    """A snapshot taken after a tool cycle may hold the request with the results, not sent yet
    (so not in the log): continuing or forking from it hands that request on, so no tool reruns."""
    from threadline.storage import SnapshotMark, StepWrite
    from threadline.storage.testing import turn

    messages = turn(0, conversation_id='c-unsent', run_id='r-unsent')
    mark = SnapshotMark('complete', 1, 'after-tools', pending=messages[2:3])
    await store.step_write(StepWrite('c-unsent', 'acme', 'r-unsent', None, messages=messages[:2], snapshot=mark))
    resumed = await continue_run(store, 'r-unsent', scope='acme')
    assert resumed.messages == messages[:3] and resumed.conversation_id == 'c-unsent'
    forked = await fork_run(store, 'r-unsent', scope='acme')
    assert forked.messages == messages[:3] and forked.conversation_id != 'c-unsent'
    assert (await store.load('c-unsent', scope='acme')).messages == messages[:2]


async def test_a_delegate_run_records_its_orchestrator(store: Any) -> None:
    reader = Agent(TestModel(), capabilities=[StepPersistence(store, scope='acme', agent_name='reader')])
    planner = Agent(TestModel(), capabilities=[StepPersistence(store, scope='acme', parent_run_id='upstream-7')])

    @planner.tool_plain
    async def ask_the_reader(question: str) -> str:
        return (await reader.run(question)).output

    top = await planner.run('plan it')
    [child] = await store.find_runs(scope='acme', parent_run_id=top.run_id)
    assert child.agent_name == 'reader'
    run = await store.get_run(top.run_id, scope='acme')
    assert run is not None and (run.agent_name, run.parent_run_id) == (None, 'upstream-7')
