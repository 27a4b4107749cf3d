"""A real pydantic-ai Agent with Threadline's StepPersistence, killed with SIGKILL inside a tool
body, inside a model call (between steps), before a run and after a save: no turn reported saved
is lost, the stored history re-hashes against its chain, a call killed inside its tool is
reported unknown, and the history continues on pydantic-ai once those calls are reconciled.
12 trials on SQLite by default; `-m slow` runs 100 on SQLite and 30 on PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.storage.conftest import fresh_postgres_url, needs_postgres
from tests.storage.test_crash import run_trials
from threadline.audit import reconcile_tool_call
from threadline.exceptions import ConversationNotFound
from threadline.pydantic_ai import StepPersistence, load_history
from threadline.storage import inspect_recovery, open_store

CHILD = Path(__file__).with_name('_crash_child.py')


def continues_on_pydantic_ai(target: str, trials: int) -> int:
    """Each trial's conversation, its unknown calls reconciled, runs one more pydantic-ai turn."""
    store = open_store(target)

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('still here')])

    agent = Agent(FunctionModel(answer), capabilities=[StepPersistence(store, scope='crash')])
    continued = 0
    try:
        for trial in range(trials):
            cid = f'crash-{trial}'
            try:
                runs = store.sync.list_runs(cid, scope='crash')
            except ConversationNotFound:
                continue
            for run in runs:
                for effect in asyncio.run(inspect_recovery(store, run.run_id, scope='crash')).unknown:
                    reconcile_tool_call(store, cid, effect.tool_call_id, scope='crash', result='?', evidence='test')
            try:
                history = load_history(store, cid, scope='crash')
            except ConversationNotFound:
                continue
            result = agent.run_sync('are you there?', **history.run_kwargs())
            assert result.output == 'still here'
            continued += 1
    finally:
        store.close()
    return continued


def test_sqlite_survives_sigkill(tmp_path: Path) -> None:
    target = str(tmp_path / 'crash.db')
    totals = run_trials(lambda t: target, 12, seed=11, child_script=CHILD)
    assert continues_on_pydantic_ai(target, 12) > 0
    assert totals['unknown'] == totals['killed_in_tool']


@pytest.mark.slow
def test_sqlite_survives_sigkill_100(tmp_path: Path) -> None:
    target = str(tmp_path / 'crash.db')
    run_trials(lambda t: target, 100, seed=12, child_script=CHILD)
    print(f'continued on pydantic-ai: {continues_on_pydantic_ai(target, 100)}')


@pytest.mark.slow
@needs_postgres
def test_postgres_survives_sigkill_30() -> None:
    url = fresh_postgres_url()
    run_trials(lambda t: url, 30, seed=13, child_script=CHILD)
    print(f'continued on pydantic-ai: {continues_on_pydantic_ai(url, 30)}')
