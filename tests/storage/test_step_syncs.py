"""How often StepPersistence waits for the disk, and that what must be durable is durable first.

Counted on SQLite through its statement trace: a write transaction is `BEGIN IMMEDIATE` ...
`COMMIT`, and in WAL mode only a commit under `synchronous=FULL` syncs. The rules are in the
docstring of `threadline.steps._persistence`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.storage.test_step_persistence import TOOL_TURN_EVENTS
from threadline import Agent, ModelMessage, ModelResponse, TextPart, ToolCallPart
from threadline.models.function import AgentInfo, FunctionModel
from threadline.storage import SQLiteStore, StepPersistence


class Commits:
    """Write transactions on one SQLite connection, each marked synced or not."""

    def __init__(self, store: SQLiteStore) -> None:
        self.log: list[bool] = []
        self._mode, self._writing = 'FULL', False
        store.dialect.connection.set_trace_callback(self._see)

    def _see(self, statement: str) -> None:
        text = statement.strip().upper()
        if text.startswith('PRAGMA SYNCHRONOUS='):
            self._mode = text.split('=', 1)[1]
        elif text.startswith('BEGIN'):
            self._writing = text == 'BEGIN IMMEDIATE'
        elif text.startswith('COMMIT') and self._writing:
            self.log.append(self._mode == 'FULL')

    @property
    def syncs(self) -> int:
        return sum(self.log)


def calling(*names: str) -> FunctionModel:
    """A model that calls `names` at once (one response), then answers in text."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(n, {'order': str(i)}, f'call-{i}') for i, n in enumerate(names)])
        return ModelResponse(parts=[TextPart('done')])

    return FunctionModel(model)


@pytest.mark.parametrize('calls', [1, 3])
def test_a_tool_calling_turn_syncs_twice_whatever_the_number_of_calls(tmp_path: Path, calls: int) -> None:
    store = SQLiteStore(tmp_path / 'steps.db')
    agent = Agent(calling(*['refund'] * calls), capabilities=[StepPersistence(store, scope='acme')])

    @agent.tool_plain
    async def refund(order: str) -> str:
        return f'refunded {order}'

    commits = Commits(store)
    result = agent.run_sync('refund my orders')
    # the prompt (behind the model request, not synced), the started rows (one group commit for
    # all calls), the step's results (not synced), the end of the run
    assert commits.syncs == 2 and commits.log == [False, True, False, True]
    effects = store.sync.tool_effects(result.run_id, scope='acme')
    assert [e.status for e in effects] == ['completed'] * calls
    assert store.sync.load(result.conversation_id, scope='acme').messages == result.all_messages()


@pytest.mark.parametrize('answers_at_once', [False, True])
def test_a_write_behind_that_has_not_started_is_carried_by_the_next_write(
    tmp_path: Path, answers_at_once: bool
) -> None:
    """The tools' answers go behind the next model request. A model that answers before the event
    loop got to that write has it carried by the run's last write: one transaction, and the same
    records as two, but for the settled snapshot the last write takes the place of."""
    import asyncio

    store = SQLiteStore(tmp_path / 'steps.db')

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not answers_at_once:
            await asyncio.sleep(0.005)
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart('refund', {'order': '1'}, 'call-1')])
        return ModelResponse(parts=[TextPart('done')])

    agent = Agent(FunctionModel(model), capabilities=[StepPersistence(store, scope='acme')])

    @agent.tool_plain
    async def refund(order: str) -> str:
        return f'refunded {order}'

    commits = Commits(store)
    result = agent.run_sync('refund my order')
    assert commits.log == ([False, True, True] if answers_at_once else [False, True, False, True])
    assert store.sync.load(result.conversation_id, scope='acme').messages == result.all_messages()
    kinds = [e.kind for e in store.sync.list_events(result.run_id, scope='acme')]
    assert kinds == TOOL_TURN_EVENTS
    snapshots = [(s.state, s.position) for s in store.sync.list_snapshots(result.run_id, scope='acme')]
    tools_answered = [] if answers_at_once else [('complete', 3)]
    assert snapshots == [('complete', 1), ('interrupted', 2), *tools_answered, ('complete', 4)]
    [effect] = store.sync.tool_effects(result.run_id, scope='acme')
    assert effect.status == 'completed'
    assert store.sync.get_run(result.run_id, scope='acme').status == 'completed'  # type: ignore[union-attr]
    assert store.sync.verify(result.conversation_id, scope='acme').ok


def test_a_turn_without_tools_syncs_once_when_it_ends(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'steps.db')
    commits = Commits(store)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('hello')])

    agent = Agent(FunctionModel(model), capabilities=[StepPersistence(store, scope='acme')])
    result = agent.run_sync('hi')
    assert commits.log == [False, True]  # the prompt is made durable by the answer's sync
    assert store.sync.load(result.conversation_id, scope='acme').messages == result.all_messages()


def test_the_started_row_is_committed_and_synced_before_the_tool_body_runs(tmp_path: Path) -> None:
    path = tmp_path / 'steps.db'
    store = SQLiteStore(path)
    agent = Agent(calling('refund', 'refund'), capabilities=[StepPersistence(store, scope='acme')])
    commits = Commits(store)
    seen: list[Any] = []

    @agent.tool_plain
    def refund(order: str) -> str:
        other = SQLiteStore(path, read_only=True)  # another connection sees only what is committed
        try:
            [summary] = other.sync.list('acme')
            [run] = other.sync.list_runs(summary.conversation_id, scope='acme')
            rows = other.sync.tool_effects(run.run_id, scope='acme')
            stored = other.sync.load(summary.conversation_id, scope='acme').messages
        finally:
            other.close()
        seen.append(([(r.tool_call_id, r.status) for r in rows], commits.log[-1], type(stored[-1]).__name__))
        return 'ok'

    agent.run_sync('refund two orders')
    started = [('call-0', 'started'), ('call-1', 'started')]
    # both rows, and the response that called them, were in one synced commit before either body ran
    assert seen == [(started, True, 'ModelResponse')] * 2


def test_a_failed_write_keeps_what_was_pending_for_the_next_one(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'steps.db')
    agent = Agent(calling('refund'), capabilities=[StepPersistence(store, scope='acme')])
    real = store.sync.step_write
    failures = iter([True])

    def flaky(write: Any) -> int:
        if write.effects and next(failures, False):
            raise OSError('disk full')
        return real(write)

    store.sync.step_write = flaky  # type: ignore[method-assign]

    @agent.tool_plain
    def refund(order: str) -> str:
        return 'refunded'

    with pytest.raises(OSError, match='disk full'):
        agent.run_sync('refund')
    [summary] = store.sync.list('acme')
    [run] = store.sync.list_runs(summary.conversation_id, scope='acme')
    # the run's failure write carried the events and the ledger row the failed write dropped
    assert run.status == 'failed'
    kinds = [e.kind for e in store.sync.list_events(run.run_id, scope='acme')]
    assert kinds[:3] == ['run_started', 'model_request_started', 'model_request_completed']
    assert 'tool_call_started' in kinds and kinds[-1] == 'run_failed'
    [effect] = store.sync.tool_effects(run.run_id, scope='acme')
    # the body never ran: the error hooks closed the row as failed, and that reached the store
    assert effect.status == 'failed' and effect.summary and 'disk full' not in effect.summary


def test_an_error_of_the_write_behind_the_first_request_stops_the_run_before_any_tool(tmp_path: Path) -> None:
    from threadline.exceptions import ConflictError

    store = SQLiteStore(tmp_path / 'steps.db')
    agent = Agent(calling('refund'), capabilities=[StepPersistence(store, scope='acme')])
    real = store.sync.step_write
    ran: list[str] = []

    def conflicting(write: Any) -> int:
        if write.register:  # the first write: another writer got there first
            raise ConflictError('conversation changed', conversation_id=write.conversation_id, expected=0, actual=1)
        return real(write)

    store.sync.step_write = conflicting  # type: ignore[method-assign]

    @agent.tool_plain
    def refund(order: str) -> str:
        ran.append(order)
        return 'refunded'

    with pytest.raises(ConflictError):
        agent.run_sync('refund')
    assert ran == []


async def test_a_run_cancelled_during_its_first_request_has_its_prompt_stored_when_it_returns(
    tmp_path: Path,
) -> None:
    import asyncio

    from threadline.storage import FileStore

    store = FileStore(tmp_path / 'files')  # the slowest writer: the write behind is still going
    entered = asyncio.Event()

    async def stuck(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        entered.set()
        await asyncio.sleep(3600)
        raise AssertionError('not reached')

    agent = Agent(FunctionModel(stuck), capabilities=[StepPersistence(store, scope='acme')])
    task = asyncio.create_task(agent.run('keep this prompt'))
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [summary] = store.sync.list('acme')
    [prompt] = store.sync.load(summary.conversation_id, scope='acme').messages
    assert prompt.parts[-1].content == 'keep this prompt'


async def test_a_run_cancelled_while_its_start_is_read_leaves_nothing_open(tmp_path: Path) -> None:
    """The run start's read is still under way in its thread when the run is cancelled: the run
    returns once the read is done, and the capability holds nothing of the run afterwards."""
    import asyncio
    import threading

    store = SQLiteStore(tmp_path / 'steps.db')
    reading, release = threading.Event(), threading.Event()
    read = store.sync.run_start

    def slow_read(conversation_id: str, *, scope: str) -> Any:
        reading.set()
        release.wait(5)
        return read(conversation_id, scope=scope)

    store.sync.run_start = slow_read  # type: ignore[method-assign]
    persistence = StepPersistence(store, scope='acme')
    agent = Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart('hi')])), capabilities=[persistence])
    busy = _hold_connection(store, until=reading)  # so the read goes to a worker thread
    task = asyncio.create_task(agent.run('hello'))
    await asyncio.to_thread(reading.wait, 5)
    await asyncio.to_thread(busy.join, 5)
    await asyncio.sleep(0.01)  # the run reaches its first hook, which waits for the read
    task.cancel()
    asyncio.get_running_loop().call_later(0.05, release.set)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert release.is_set()  # the run returned only after its read was done
    assert persistence._runs == {} and persistence._opening == {}  # nothing of the run is kept
    assert store.sync.list('acme') == []


def _hold_connection(store: SQLiteStore, *, until: Any) -> Any:
    """Another thread using the store's connection until `until` is set (a running thread)."""
    import threading

    held = threading.Event()

    def hold() -> None:
        with store.dialect.uncontended() as free:
            assert free
            held.set()
            until.wait(5)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(5)
    return thread


def _threads_of(store: SQLiteStore, name: str) -> list[str]:
    """Record, for each call of the store operation `name`, whether it ran in the event loop's thread."""
    import threading

    seen: list[str] = []
    operation = getattr(store.sync, name)

    def recorded(*args: Any, **kwargs: Any) -> Any:
        seen.append('loop' if threading.current_thread() is threading.main_thread() else 'thread')
        return operation(*args, **kwargs)

    setattr(store.sync, name, recorded)
    return seen


def test_a_free_database_is_read_and_written_in_the_event_loop(tmp_path: Path) -> None:
    """The run start's read, the two synced writes the run waits for and the unsynced writes that
    go behind a model request all skip the thread hop when the database is free."""
    store = SQLiteStore(tmp_path / 'steps.db')
    agent = Agent(calling('refund'), capabilities=[StepPersistence(store, scope='acme')])

    @agent.tool_plain
    def refund(order: str) -> str:
        return f'refunded {order}'

    reads, writes = _threads_of(store, 'run_start'), _threads_of(store, 'step_write')
    result = agent.run_sync('refund my order')
    assert reads == ['loop']
    # the prompt (behind the first request), the started row, the tool's result (behind the
    # second request), the end of the run
    assert writes == ['loop', 'loop', 'loop', 'loop']
    assert store.sync.load(result.conversation_id, scope='acme').messages == result.all_messages()
    assert [e.status for e in store.sync.tool_effects(result.run_id, scope='acme')] == ['completed']
    # the connection is left as it was configured
    assert store.dialect.connection.execute('PRAGMA busy_timeout').fetchone()[0] == 30_000
    assert store.dialect.connection.execute('PRAGMA wal_autocheckpoint').fetchone()[0] == 1000


def test_the_wal_stays_short_when_every_write_is_made_in_the_event_loop(tmp_path: Path) -> None:
    """No checkpoint runs inside the event loop, and here almost no write goes to a thread, where a
    commit would checkpoint: the store checkpoints behind the writes, so the WAL does not grow
    with the conversation (SQLite's own bound is 1000 pages)."""
    import sqlite3

    path = tmp_path / 'steps.db'
    store = SQLiteStore(path)
    agent = Agent(calling('refund'), capabilities=[StepPersistence(store, scope='acme')])

    @agent.tool_plain
    def refund(order: str) -> str:
        return f'refunded {order}'

    writes = _threads_of(store, 'step_write')
    history = None
    for turn in range(50):
        history = agent.run_sync(f'refund order {turn}', message_history=history, conversation_id='c').all_messages()
    # the model calls the tool on the first turn only; a write goes to a thread only while a
    # checkpoint holds the connection
    assert len(writes) == 4 + 49 * 2 and writes.count('loop') > 80
    other = sqlite3.connect(path)  # while the store is open (the last connection to close checkpoints)
    _, frames, _ = other.execute('PRAGMA wal_checkpoint(PASSIVE)').fetchone()
    assert frames < 1000  # a hundred writes of a dozen pages or more each were made
    other.close()
    store.close()
    reopened = SQLiteStore(path)
    assert reopened.sync.load('c', scope='acme').messages == history
    assert reopened.sync.verify('c', scope='acme').ok


async def test_a_database_another_process_is_writing_is_waited_for_in_a_thread_not_in_the_event_loop(
    tmp_path: Path,
) -> None:
    """While another process holds the write lock, the synced write a run waits for goes to a
    worker thread and waits there: the event loop keeps serving other coroutines, and the run
    stores its turn once, completely, when the lock is released."""
    import asyncio
    import sqlite3
    import time

    store = SQLiteStore(tmp_path / 'steps.db')
    other = sqlite3.connect(tmp_path / 'steps.db', isolation_level=None)
    agent = Agent(calling('refund'), capabilities=[StepPersistence(store, scope='acme')])
    locked = asyncio.Event()

    @agent.tool_plain
    async def refund(order: str) -> str:
        return f'refunded {order}'

    async def lock_before_the_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            await asyncio.sleep(0.05)  # the prompt's write behind this request is done
            other.execute('BEGIN IMMEDIATE')  # the next write, the started row, must wait
            locked.set()
            return ModelResponse(parts=[ToolCallPart('refund', {'order': '1'}, 'call-1')])
        return ModelResponse(parts=[TextPart('done')])

    agent.model = FunctionModel(lock_before_the_answer)
    writes = _threads_of(store, 'step_write')
    run = asyncio.create_task(agent.run('refund my order'))
    await locked.wait()
    ticks, start = 0, time.perf_counter()
    while time.perf_counter() - start < 0.3:  # the loop is free while the write waits
        await asyncio.sleep(0.01)
        ticks += 1
    assert not run.done()
    other.execute('ROLLBACK')
    result = await run
    assert ticks >= 10
    # the started row: tried in the loop, refused at once by the busy lock, then waited for in a
    # thread; the tool's answer, whose write behind the second request had not started when that
    # request was answered, is carried by the last write
    assert writes == ['loop', 'loop', 'thread', 'loop']
    stored = store.sync.load(result.conversation_id, scope='acme').messages
    assert stored == result.all_messages() and len(stored) == 4
    assert [e.status for e in store.sync.tool_effects(result.run_id, scope='acme')] == ['completed']


async def test_concurrent_runs_beside_another_writing_process_store_every_turn_once(tmp_path: Path) -> None:
    """Runs sharing one store, while another process keeps taking the write lock: their writes go
    to the loop or to threads as the database allows, and every conversation is stored exactly
    as its runs returned it, with a valid seal."""
    import asyncio
    import subprocess
    import sys

    path = tmp_path / 'steps.db'
    store = SQLiteStore(path)

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(0.002)
        if messages[-1].parts[-1].part_kind == 'tool-return':  # the call was answered
            return ModelResponse(parts=[TextPart('done')])
        return ModelResponse(parts=[ToolCallPart('lookup', {'x': len(messages)}, f'call-{len(messages)}')])

    agent = Agent(FunctionModel(model), capabilities=[StepPersistence(store, scope='acme')])

    @agent.tool_plain
    async def lookup(x: int) -> str:
        return f'found {x}'

    async def conversation(i: int) -> list[ModelMessage]:
        history: list[ModelMessage] | None = None
        for turn in range(3):
            result = await agent.run(f'turn {turn}', message_history=history, conversation_id=f'conv-{i}')
            history = result.all_messages()
        assert history is not None
        return history

    locker = (
        'import sqlite3, sys, time\n'
        'c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)\n'
        'end = time.time() + 1.5\n'
        'while time.time() < end:\n'
        '    c.execute("BEGIN IMMEDIATE"); time.sleep(0.003); c.execute("ROLLBACK"); time.sleep(0.002)\n'
    )
    other = subprocess.Popen([sys.executable, '-c', locker, str(path)])
    try:
        histories = await asyncio.gather(*(conversation(i) for i in range(10)))
    finally:
        other.wait(10)
    for i, history in enumerate(histories):
        assert len(history) == 12  # three turns of prompt, call, result, answer
        assert store.sync.load(f'conv-{i}', scope='acme').messages == history
        assert store.sync.verify(f'conv-{i}', scope='acme').ok
