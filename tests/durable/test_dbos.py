"""`DBOSDurability` on Threadline's own `Agent`, on a real DBOS Transact (SQLite system database):
a run inside a workflow records its model requests and tool calls as steps under pinned names, a
replayed workflow makes none of them again, a process killed inside a tool resumes on restart with
the tool told it is a retry, and outside a workflow nothing changes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID

from tests.durable._spawn import child
from tests.storage.conftest import fresh_postgres_url, needs_postgres
from threadline import Agent, ModelMessage, ModelResponse, RunContext, TextPart, ToolCallPart, UserError
from threadline.durable import STEP_NAMES, DBOSDurability, dbos_config
from threadline.models.function import AgentInfo, FunctionModel
from threadline.storage import FileStore, MemoryStore, PostgresStore, SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
requests: list[int] = []
tool_runs: list[str | None] = []


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    requests.append(len(messages))
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('look_up', {'order': 'A-17'}, tool_call_id='call-1')])
    return ModelResponse(parts=[TextPart('A-17 ships on Monday')])


agent = Agent(FunctionModel(model), name='orders', capabilities=[DBOSDurability()])


@agent.tool
def look_up(ctx: RunContext[None], order: str) -> str:
    tool_runs.append(ctx.crash_retry.idempotency_key if ctx.crash_retry else None)
    return f'{order}: ships on Monday'


@DBOS.workflow(name='orders_turn')
async def orders_turn(prompt: str) -> str:
    return (await agent.run(prompt, conversation_id='orders', run_id=DBOS.workflow_id)).output


def three_at_once(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('slow', {'n': n}, tool_call_id=f'call-{n}') for n in range(3)])
    return ModelResponse(parts=[TextPart('all three done')])


parallel = Agent(FunctionModel(three_at_once), capabilities=[DBOSDurability()])
running: list[int] = []
overlaps: list[int] = []


@parallel.tool_plain
async def slow(n: int) -> int:
    running.append(n)
    overlaps.append(len(running))
    await asyncio.sleep(0.01)
    running.remove(n)
    return n


@DBOS.workflow(name='parallel_turn')
async def parallel_turn() -> str:
    return (await parallel.run('do all three', run_id=DBOS.workflow_id)).output


@DBOS.workflow(name='orders_streamed')
async def orders_streamed(prompt: str) -> str:
    async with agent.run_stream(prompt) as streamed:
        return await streamed.get_output()


@pytest.fixture(autouse=True)
def fresh_counts() -> None:
    requests.clear()
    tool_runs.clear()


async def test_outside_a_workflow_nothing_changes() -> None:
    result = await agent.run('when does A-17 ship?')
    assert result.output == 'A-17 ships on Monday' and requests == [1, 3] and tool_runs == [None]


async def test_a_run_in_a_workflow_is_steps_under_pinned_names(dbos: None) -> None:
    with SetWorkflowID('orders-1'):
        handle = await DBOS.start_workflow_async(orders_turn, 'when does A-17 ship?')
    assert await handle.get_result() == 'A-17 ships on Monday'
    steps = await DBOS.list_workflow_steps_async('orders-1')
    names = [s['function_name'] for s in steps]
    assert names == [
        'threadline.model_request',
        'threadline.tool_call',
        'threadline.model_request',
    ]
    # the names are compatibility data for workflows in flight: changing one is a migration
    assert STEP_NAMES == (
        'threadline.model_request',
        'threadline.tool_call',
        'threadline.store.conversation_state',
        'threadline.store.run_start',
        'threadline.store.step_write',
    )
    # each checkpoint holds one response or one tool result, not the history
    assert all(len(json.dumps(str(s['output']))) < 2_000 for s in steps)


async def test_a_replayed_workflow_makes_no_request_and_runs_no_tool_again(dbos: None) -> None:
    with SetWorkflowID('orders-2'):
        first = await (await DBOS.start_workflow_async(orders_turn, 'when does A-17 ship?')).get_result()
    made, ran = list(requests), list(tool_runs)
    with SetWorkflowID('orders-2'):  # the same workflow again: its recorded result, nothing re-run
        again = await (await DBOS.start_workflow_async(orders_turn, 'when does A-17 ship?')).get_result()
    assert again == first and requests == made and tool_runs == ran


async def test_parallel_calls_take_their_steps_one_at_a_time(dbos: None) -> None:
    with SetWorkflowID('parallel-1'):
        assert await (await DBOS.start_workflow_async(parallel_turn)).get_result() == 'all three done'
    names = [s['function_name'] for s in await DBOS.list_workflow_steps_async('parallel-1')]
    body = ['threadline.tool_call']
    assert names == ['threadline.model_request', *body * 3, 'threadline.model_request']
    assert overlaps == [1, 1, 1]  # never two bodies at once inside the workflow


async def test_a_streamed_request_inside_a_workflow_is_refused(dbos: None) -> None:
    with SetWorkflowID('orders-3'):
        handle = await DBOS.start_workflow_async(orders_streamed, 'when does A-17 ship?')
    with pytest.raises(UserError, match='streamed model request inside a DBOS workflow'):
        await handle.get_result()
    assert requests == []


def test_it_refuses_a_bad_retry_count() -> None:
    with pytest.raises(UserError, match='non-negative integer'):
        DBOSDurability(retries=-1)


def _child(directory: Path, command: str, backend: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, '-m', 'tests.durable._child', str(directory), command, backend],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize('backend', ['sqlite', pytest.param('postgres', marks=needs_postgres)])
def test_a_process_killed_inside_a_tool_finishes_the_run_on_restart(backend: str, tmp_path: Path) -> None:
    if backend == 'postgres':
        import psycopg

        with psycopg.connect(fresh_postgres_url(), autocommit=True) as conn:
            conn.execute('DROP SCHEMA IF EXISTS threadline_dbos CASCADE')
    started = _child(tmp_path, 'start', backend)
    assert started.returncode == -9, started.stderr  # SIGKILL, inside the tool
    recovered = _child(tmp_path, 'recover', backend)
    assert recovered.returncode == 0, recovered.stderr
    assert json.loads(recovered.stdout.strip().splitlines()[-1]) == {'output': 'refunded A-17'}
    log: list[dict[str, Any]] = [json.loads(line) for line in (tmp_path / 'log.jsonl').read_text().splitlines()]
    kinds = [(e['kind'], e.get('messages'), e.get('retry')) for e in log]
    assert kinds == [
        ('model_request', 1, None),  # made once: after the restart its checkpointed answer is used
        ('tool', None, None),  # the attempt the process died in
        ('tool', None, 'turn-1/call-1'),  # run again, told so, with the call's idempotency key
        ('model_request', 3, None),
    ]
    assert len({e['pid'] for e in log}) == 2
    if backend == 'sqlite':  # DBOS's checkpoints sit beside the store's file
        assert (tmp_path / 'store.db-dbos.sqlite').is_file()


def test_dbos_config_puts_the_system_database_with_the_store(tmp_path: Path) -> None:
    beside = dbos_config(SQLiteStore(tmp_path / 'app.db'), name='app')
    assert beside['system_database_url'] == f'sqlite:///{tmp_path.resolve() / "app.db-dbos.sqlite"}'
    # WAL, committing as the store does: FULL (2) by default, NORMAL (1) when the store says so
    for store, level in (
        (SQLiteStore(tmp_path / 'app.db'), 2),
        (SQLiteStore(tmp_path / 'n.db', synchronous='NORMAL'), 1),
    ):
        with dbos_config(store, name='app')['system_database_engine'].connect() as connection:
            pragma = connection.exec_driver_sql
            assert (pragma('PRAGMA journal_mode').scalar(), pragma('PRAGMA synchronous').scalar()) == ('wal', level)
            assert pragma('PRAGMA foreign_keys').scalar() == 1
    files = dbos_config(FileStore(tmp_path / 'files'), name='app', log_level='WARNING')
    assert files['system_database_url'].endswith('/files/dbos.sqlite') and files['log_level'] == 'WARNING'
    with pytest.raises(UserError, match='in-memory store'):
        dbos_config(MemoryStore(), name='app')


@needs_postgres
def test_dbos_config_uses_the_postgres_store_database_in_its_own_schema() -> None:
    store = PostgresStore(fresh_postgres_url())
    config = dbos_config(store, name='app')
    assert (config['system_database_url'], config['dbos_system_schema']) == (store.url, 'threadline_dbos')
    store.close()


def test_importing_threadline_durable_does_not_load_dbos() -> None:
    code = 'import sys, threadline.durable; assert "dbos" not in sys.modules, "dbos loaded"'
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def _persisted(directory: Path, command: str) -> subprocess.CompletedProcess[str]:
    return child('_persist_child', directory, command)


def _without_ids_and_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_ids_and_times(v) for k, v in value.items() if k not in ('timestamp', 'run_id')}
    if isinstance(value, list):
        return [_without_ids_and_times(v) for v in value]
    return value


def test_with_step_persistence_the_store_and_dbos_agree_after_a_crash(tmp_path: Path) -> None:
    """Killed inside a tool, resumed on restart: the stored conversation is the one an uncrashed
    run stores, the ledger says the call completed, the tool was told its recorded key, and no
    model request that completed was made again."""
    crashed, clean = tmp_path / 'crashed', tmp_path / 'clean'
    crashed.mkdir(), clean.mkdir()
    assert _persisted(crashed, 'start').returncode == -9
    recovered, uncrashed = _persisted(crashed, 'recover'), _persisted(clean, 'clean')
    assert recovered.returncode == 0, recovered.stderr
    assert uncrashed.returncode == 0, uncrashed.stderr
    after, before = (json.loads(p.stdout.strip().splitlines()[-1]) for p in (recovered, uncrashed))
    assert after['output'] == before['output'] == 'done after 7 messages'
    assert _without_ids_and_times(after['messages']) == _without_ids_and_times(before['messages'])
    assert after['ledger'] == before['ledger'] == [['call-5', 'completed', 'refund-A-17']]
    assert after['verified'] and before['verified']
    log = [json.loads(line) for line in (crashed / 'log.jsonl').read_text().splitlines()]
    requests_made = [e['messages'] for e in log if e['kind'] == 'model_request']
    assert requests_made == [1, 3, 5, 7]  # the durable turn's first request (5) was made once
    assert [e['retry'] for e in log if e['kind'] == 'tool' and e['order'] == 'A-17'] == [None, 'refund-A-17']
