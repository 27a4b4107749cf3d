"""pydantic-ai-harness's own `StepPersistence` writing into a Threadline store through
`HarnessStepStore`: what it reads back is what the harness's own store gives, the log holds each
message once (snapshots are positions), scopes never leak, and a crash inside a tool leaves an
unknown effect Threadline's own readers refuse to run past."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai_harness.step_persistence import InMemoryStepStore, StepPersistence, StepStore, continue_run

import threadline
from tests.pydantic_ai.test_step_persistence import BACKENDS, ToolCrash, a_store
from threadline.exceptions import UnresolvedToolEffect
from threadline.pydantic_ai import HarnessStepStore, load_history
from threadline.storage import AsyncStore, SyncStore

ROOT = Path(__file__).resolve().parents[2]


def look_it_up(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Every turn: one tool call (its id numbered by the history's length), then an answer."""
    if any(part.part_kind == 'tool-return' for part in messages[-1].parts):
        return ModelResponse(parts=[TextPart('it is in messages.py')])
    return ModelResponse(parts=[ToolCallPart('find_symbol', {'symbol': 'X'}, tool_call_id=f'call-{len(messages)}')])


def librarian(store: Any, *, crash: bool = False, name: str = 'librarian') -> Agent[None, str]:
    agent = Agent(FunctionModel(look_it_up), name=name, capabilities=[StepPersistence(store=store, agent_name=name)])

    @agent.tool_plain
    def find_symbol(symbol: str) -> str:
        if crash:
            raise ToolCrash
        return f'{symbol} is in messages.py'

    return agent


def test_it_is_the_harness_store_protocol(tmp_path: Path) -> None:
    assert isinstance(HarnessStepStore(a_store('sqlite', tmp_path), scope='s'), StepStore)
    with pytest.raises(threadline.UserError, match='non-empty scope'):
        HarnessStepStore(a_store('memory', tmp_path), scope='')


async def last_run(store: Any, conversation_id: str) -> str:
    """The newest run of the conversation (with `agent_name`, the harness derives its own run id)."""
    return str((await store.list_runs(conversation_id=conversation_id))[-1].run_id)


async def _trace(store: Any, run_id: str) -> dict[str, Any]:
    """What the harness's store methods answer about a run, with the run's own ids left out."""
    [run] = [r for r in await store.list_runs() if r.run_id == run_id]
    snapshot = await store.latest_snapshot(run_id=run_id)
    return {
        'run': (run.agent_name, run.parent_run_id, run.metadata, run.registration_id is not None),
        'events': [
            (e.kind, e.step_index, e.tool_call_id, e.tool_name, e.error is None, e.agent_name, e.idempotency_key)
            for e in await store.list_events(run_id=run_id)
        ],
        'snapshot': (snapshot.step_index, snapshot.state, len(snapshot.messages), snapshot.agent_name),
        'effects': [
            (e.tool_name, e.status, e.ended_at is not None)
            for e in [await store.get_tool_effect(run_id=run_id, tool_call_id='call-1')]
            if e is not None
        ],
        'unresolved': await store.list_unresolved_tool_effects(run_id=run_id),
    }


@pytest.mark.parametrize('backend', BACKENDS)
async def test_it_answers_what_the_harness_own_store_answers(backend: str, tmp_path: Path) -> None:
    ours, theirs = HarnessStepStore(a_store(backend, tmp_path), scope='docs'), InMemoryStepStore()
    results = {}
    for store in (ours, theirs):
        result = await librarian(store).run('where is ThinkingPartDelta?', conversation_id='libr-conv')
        run_id = await last_run(store, 'libr-conv')
        snapshot = await store.latest_snapshot(run_id=run_id)
        assert snapshot is not None and snapshot.messages == result.all_messages()
        assert snapshot.conversation_id == 'libr-conv'
        results[store] = run_id
    assert await _trace(ours, results[ours]) == await _trace(theirs, results[theirs])


@pytest.mark.parametrize('backend', BACKENDS)
async def test_snapshots_are_positions_in_one_log(backend: str, tmp_path: Path) -> None:
    """Turn after turn, the conversation is one branch holding each message once, and every
    snapshot is the log up to a position (plus, after a tool cycle, the request not sent yet)."""
    threadline_store = a_store(backend, tmp_path)
    store = HarnessStepStore(threadline_store, scope='docs')
    history: list[ModelMessage] = []
    for turn in range(4):
        result = await librarian(store).run(f'question {turn}', message_history=history, conversation_id='c')
        history = result.all_messages()
    stored = await threadline_store.load('c', scope='docs')
    assert stored.messages == threadline.pydantic_ai.from_pydantic_ai(history)
    assert len(await threadline_store.branches('c', scope='docs')) == 1
    for run in await store.list_runs(conversation_id='c'):
        for mark in await threadline_store.list_snapshots(run.run_id, scope='docs'):
            assert mark.position <= len(stored.messages) and len(mark.pending) <= 1
    assert load_history(threadline_store, 'c', scope='docs').messages == history


async def test_a_delegate_records_its_orchestrator(tmp_path: Path) -> None:
    store = HarnessStepStore(a_store('sqlite', tmp_path), scope='docs')
    reader = librarian(store, name='reader')
    orchestrator = Agent(TestModel(), name='planner', capabilities=[StepPersistence(store=store, agent_name='planner')])

    @orchestrator.tool_plain
    async def delegate(question: str) -> str:
        return (await reader.run(question, conversation_id='reader-conv')).output

    await orchestrator.run('plan it', conversation_id='plan-conv')
    top = await last_run(store, 'plan-conv')
    [child] = await store.list_runs(parent_run_id=top)
    assert (child.agent_name, child.conversation_id) == ('reader', 'reader-conv')
    assert await store.list_runs(parent_run_id=top, conversation_id='plan-conv') == []
    assert [r.agent_name for r in await store.list_runs()] == ['planner', 'reader']


@pytest.mark.parametrize('backend', BACKENDS)
async def test_another_scope_sees_nothing(backend: str, tmp_path: Path) -> None:
    threadline_store = a_store(backend, tmp_path)
    mine, theirs = HarnessStepStore(threadline_store, scope='tenant-a'), HarnessStepStore(threadline_store, scope='b')
    await librarian(mine).run('mine', conversation_id='shared-id')
    run_id = await last_run(mine, 'shared-id')
    assert await theirs.get_run(run_id=run_id) is None
    assert await theirs.list_runs() == [] and await theirs.list_runs(conversation_id='shared-id') == []
    assert await theirs.list_events(run_id=run_id) == []
    assert await theirs.latest_snapshot(run_id=run_id, include_interrupted=True) is None
    assert await theirs.get_tool_effect(run_id=run_id, tool_call_id='call-1') is None
    # a conversation id chosen by another tenant is not theirs to write into
    with pytest.raises(threadline.exceptions.ConversationNotFound):
        await librarian(theirs).run('theirs', conversation_id='shared-id')


@pytest.mark.parametrize('backend', BACKENDS)
async def test_a_crash_in_a_tool_is_an_unknown_effect_for_every_reader(backend: str, tmp_path: Path) -> None:
    threadline_store: AsyncStore[SyncStore] = a_store(backend, tmp_path)
    store = HarnessStepStore(threadline_store, scope='docs')
    first = await librarian(store).run('first', conversation_id='c')
    with pytest.raises(ToolCrash):
        await librarian(store, crash=True).run('second', message_history=first.all_messages(), conversation_id='c')
    [_, crashed] = await store.list_runs(conversation_id='c')
    [unknown] = await store.list_unresolved_tool_effects(run_id=crashed.run_id)
    assert unknown.tool_name == 'find_symbol' and unknown.status == 'started'
    # Threadline's own readers see the same ledger and refuse to run past it
    with pytest.raises(UnresolvedToolEffect):
        await threadline.storage.continue_run(threadline_store, crashed.run_id, scope='docs', include_interrupted=True)
    ours = threadline.pydantic_ai.StepPersistence(threadline_store, scope='docs')
    again = Agent(TestModel(), capabilities=[ours])
    with pytest.raises(UnresolvedToolEffect):
        await again.run('third', **load_history(threadline_store, 'c', scope='docs').run_kwargs())


@pytest.mark.parametrize('backend', BACKENDS)
async def test_a_trimmed_history_branches_and_keeps_the_old_one(backend: str, tmp_path: Path) -> None:
    threadline_store = a_store(backend, tmp_path)
    store = HarnessStepStore(threadline_store, scope='docs')
    first = await librarian(store).run('first', conversation_id='c')
    keep_the_prompt = ProcessHistory(lambda messages: messages[-1:])
    trimmed = Agent(TestModel(), capabilities=[StepPersistence(store=store), keep_the_prompt])
    second = await trimmed.run('second', message_history=first.all_messages(), conversation_id='c')
    first_run, second_run = (r.run_id for r in await store.list_runs(conversation_id='c'))
    snapshot = await store.latest_snapshot(run_id=second_run)
    assert snapshot is not None and snapshot.messages == second.all_messages()
    old = await store.latest_snapshot(run_id=first_run)
    assert old is not None and old.messages == first.all_messages()  # the old branch is still there
    assert len(await threadline_store.branches('c', scope='docs')) == 2


async def test_a_writer_in_between_is_detected_and_compared_again(tmp_path: Path) -> None:
    """Two processes' stores on one database: each compares against the log as it now stands."""
    threadline_store = a_store('sqlite', tmp_path)
    one, two = HarnessStepStore(threadline_store, scope='docs'), HarnessStepStore(threadline_store, scope='docs')
    first = await librarian(one).run('first', conversation_id='c')
    second = await librarian(two).run('second', message_history=first.all_messages(), conversation_id='c')
    third = await librarian(one).run('third', message_history=second.all_messages(), conversation_id='c')
    assert load_history(threadline_store, 'c', scope='docs').messages == third.all_messages()
    assert len(await threadline_store.branches('c', scope='docs')) == 1


async def test_continue_run_after_a_model_failure(tmp_path: Path) -> None:
    """The harness's failure path: a run whose second model request fails is continued from its
    latest settled snapshot, which holds the tool results, so the tool does not run again."""
    store = HarnessStepStore(a_store('sqlite', tmp_path), scope='docs')
    provider_up = False

    def flaky(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart('find_symbol', {'symbol': 'X'}, tool_call_id='t1')])
        if not provider_up:
            raise RuntimeError('the provider is down')
        return ModelResponse(parts=[TextPart('X is in messages.py')])

    agent = Agent(FunctionModel(flaky), capabilities=[StepPersistence(store=store)])
    runs: list[str] = []

    @agent.tool_plain
    def find_symbol(symbol: str) -> str:
        runs.append(symbol)
        return f'{symbol} is in messages.py'

    with pytest.raises(RuntimeError, match='provider is down'):
        await agent.run('where is X?', conversation_id='c')
    [failed] = await store.list_runs(conversation_id='c')
    history = await continue_run(store, run_id=failed.run_id)
    assert isinstance(history[-1], ModelRequest) and history[-1].parts[0].part_kind == 'tool-return'
    provider_up = True
    result = await agent.run(message_history=history, conversation_id='c')
    assert result.output == 'X is in messages.py' and runs == ['X']


@pytest.mark.parametrize('script', ['quick_start.py', 'continue_run.py'])
def test_the_example_scripts_run(script: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / 'examples' / 'harness' / script), str(tmp_path / 'harness.db')],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert 'each stored once' in done.stdout or 'nothing was copied' in done.stdout
