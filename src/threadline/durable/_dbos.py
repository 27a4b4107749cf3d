"""`DBOSDurability`: a Threadline run that outlives its process, on DBOS Transact (extra `dbos`).

Run the agent inside a DBOS workflow and the run's model requests and tool calls become DBOS
steps. A process that dies mid-run has the workflow resumed when DBOS launches again (in the same
program or another executor on the same system database): every step that completed returns its
checkpointed output instead of running again, and the step that was in flight runs again.
Outside a workflow the capability changes nothing.

    store = SQLiteStore('app.db')
    DBOS(config=dbos_config(store, name='support'))
    agent = Agent(model, capabilities=[StepPersistence(store, scope='tenant-1'), DBOSDurability()])

    @DBOS.workflow(name='support_turn')
    async def support_turn(prompt: str, conversation_id: str) -> str:
        history = await durable_history(store, conversation_id, scope='tenant-1')
        result = await agent.run(
            prompt, message_history=history, conversation_id=conversation_id, run_id=DBOS.workflow_id
        )
        return result.output

Steps and their names. The names are compatibility data: a workflow started under one version
resumes under the next only if the names it recorded are still made in the same order
(`tests/durable` pins them).
- `threadline.model_request`: one model request; its output is the response as wire JSON.
- `threadline.tool_call`: the tool's body only (`wrap_tool_body`: argument validation and the
  other capabilities' tool hooks stay in the workflow); its output is what the tool returned.
- With `StepPersistence` on the agent, its store operations are steps too (`DURABLE_IO`):
  `threadline.store.run_start` (the run start's read; its output is the stored tip and the
  unresolved ledger rows) and `threadline.store.step_write` (one boundary's write; its output is
  the revision after it). `durable_history` records `threadline.store.conversation_state` (the
  history's length when the workflow first read it).

With StepPersistence, who owns what. DBOS owns resuming: the workflow, the order of steps and
each step's output. The store owns the conversation, the events, the snapshots and the ledger,
written once: on a replay each completed write is skipped, so the history is not stored twice,
and a write the crash caught between its commit and its checkpoint is recognised (the store one
revision on, holding it) rather than refused. What is recorded twice: each model response (a
step's output, and a message in the log) and each tool result (a step's output, and the tool
return in the log); DBOS's copies serve only replay. A tool run again after a crash is told the
key its first attempt recorded with `annotate_tool_effect` (the ledger's), else the DBOS key.

Rules:
- Determinism: between steps the workflow must do the same thing when it replays. The run loop
  does, given the same inputs: so pass the run the same history and ids on every attempt
  (`durable_history(store, conversation_id, scope=...)` reads the stored history as it was on the
  first attempt; `run_id=DBOS.workflow_id` keys the run by the workflow), and keep
  non-determinism (clocks, random ids, reads of changing data) inside tools or model requests.
- History processors run in the workflow, so they must be deterministic (`KeepLastTurns` and
  `ClearOldToolResults` are); one that calls a model (`SummarizeOlderTurns`) is called again on a
  replay. With StepPersistence, a processor that rewrites earlier messages is refused (a
  `UserError` before anything is written): the store would hold a branch, and a replay could not
  start from the history its first attempt did.
- `enqueue` is refused in a durable run: enqueued content is part of no step, so a replay would
  not see it. Start a new workflow with it instead.
- A run that pauses for approval ends with `DeferredToolRequests`; `wait_for_approval` keeps the
  workflow waiting durably until `send_approval` answers (see `threadline.durable._approval`).
- A tool runs at least once per call; it runs again only if the process died while it ran.
  Then `ctx.crash_retry` holds the call's idempotency key (`<workflow id>/<tool call id>`, or
  the key the ledger recorded; the same on every attempt): a tool with an effect outside the
  process looks the effect up by that key instead of repeating it. No step marks a call's start
  (each would cost a checkpoint): `crash_retry` is set when the tool's body is the first step a
  resumed execution runs, so it is also set when the process died after the step before and
  before the call began (the look-up then finds nothing, and the effect is applied once; with
  StepPersistence the ledger's start write is that first step, so this does not happen). A
  tool's return value must be something DBOS can serialize.
- The tool calls of one response run one at a time inside a workflow: a step's place in the
  workflow is the order steps start in, which parallel calls would leave to chance.
- A model request that completed is never made again; the one in flight when the process died is
  made again (a provider may then have answered twice; only the last answer is kept).
- Streaming: `agent.run(..., event_stream_handler=handler)` in a workflow streams each response
  inside its model request step, handing the events to `handler` as they arrive; the step's
  output is still the whole response, so a replay takes it from the checkpoint and its events
  reach no handler (a tool step's events do reach it again: the tool calls are workflow code).
  `run_stream()`, `run_stream_events()` and `iter()` with `node.stream()` are refused with a
  `UserError`: their caller consumes the response outside any step, so it could not be replayed.
- Checkpoints hold one response or one tool result each, never the history: a step's cost does
  not grow with the conversation. The workflow's own inputs are the caller's choice (prefer a
  conversation id over a history).

`dbos_config(store, name=...)` puts DBOS's system database with the store's data: a SQLite file
beside a `SQLiteStore`'s (in WAL mode, committing as the store does: see `_sqlite_engine`), or
the `PostgresStore`'s own database in a schema of its own, so a durable deployment needs no other
server.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy  # installed with dbos
from dbos import DBOS, DBOSConfig, StepOptions

from threadline._public import publish
from threadline.agent import CrashRetry, RunContext
from threadline.agent.capability import AbstractCapability, CapabilityDepsT, ModelRequestContext
from threadline.exceptions import UserError
from threadline.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse, ToolCallPart
from threadline.messages.wire import encode_each
from threadline.models import ToolDefinition
from threadline.steps import DURABLE_IO, recorded_idempotency_key
from threadline.storage import AsyncStore, FileStore, MemoryStore, PostgresStore, SQLiteStore, SyncStore

__all__ = ['STEP_NAMES', 'DBOSDurability', 'dbos_config', 'dbos_store_step', 'durable_history']

MODEL_REQUEST = 'threadline.model_request'
TOOL_CALL = 'threadline.tool_call'
HISTORY = 'threadline.store.conversation_state'
STEP_NAMES = (
    MODEL_REQUEST,
    TOOL_CALL,
    HISTORY,
    'threadline.store.run_start',
    'threadline.store.step_write',
)
"""Every step name this capability records (compatibility data: see the module docstring)."""

T = TypeVar('T')

ENQUEUE_REFUSED = (
    'enqueue is not available in a durable run: content enqueued by a tool or another task is not part of '
    'any step, so a replay after a crash would not see it; start a new run (a new workflow) with it instead'
)

STREAM_REFUSED = (
    'a streamed model request inside a DBOS workflow cannot be made durable (its response is consumed '
    'outside any step); use agent.run() in the workflow (with event_stream_handler= to see its events), '
    'or stream outside it'
)

_in_step_request: contextvars.ContextVar[bool] = contextvars.ContextVar('threadline_durable_request', default=False)


class DBOSDurability(AbstractCapability[CapabilityDepsT]):
    """Model requests and tool calls of a run inside a DBOS workflow as DBOS steps (see the
    module docstring for the step names and what a tool may assume). `retries` is how many
    times DBOS itself retries a failed model request step (0: a failure goes to the run as
    usual, where the model's own retries and `FallbackModel` apply)."""

    id: str | None = 'dbos_durability'
    streams_in_model_request = True  # an event_stream_handler's stream runs inside the request step

    def __init__(self, *, retries: int = 0) -> None:
        if not isinstance(retries, int) or retries < 0:
            raise UserError(f'DBOSDurability(retries=...) must be a non-negative integer, not {retries!r}')
        self.retries = retries
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # per workflow: the lock, and its users

    async def wrap_model_request(
        self,
        ctx: RunContext[CapabilityDepsT],
        *,
        request_context: ModelRequestContext,
        handler: Callable[[ModelRequestContext], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        if DBOS.workflow_id is None:
            return await handler(request_context)
        if getattr(handler, 'streams_to_caller', False):
            raise UserError(STREAM_REFUSED)

        async def request() -> str:
            token = _in_step_request.set(True)
            try:
                response = await handler(request_context)
            finally:
                _in_step_request.reset(token)
            return encode_each([response])[0].decode()

        options: StepOptions = {'name': MODEL_REQUEST}
        if self.retries:
            options |= {'retries_allowed': True, 'max_attempts': self.retries + 1}
        body = await _run_step(options, request)
        [response] = ModelMessagesTypeAdapter.validate_json(f'[{body}]'.encode())
        assert isinstance(response, ModelResponse)  # a step only ever records a response
        return response

    async def before_model_request(
        self, ctx: RunContext[CapabilityDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        if DBOS.workflow_id is not None and not _in_step_request.get():
            raise UserError(STREAM_REFUSED)
        return request_context

    async def wrap_run(self, ctx: RunContext[CapabilityDepsT], *, handler: Any) -> Any:
        """Inside a workflow, StepPersistence's store reads and writes become steps too."""
        if DBOS.workflow_id is None:
            return await handler()
        token = DURABLE_IO.set(dbos_store_step)
        execution = _execution.set(_Execution())
        if ctx.queue is not None:
            ctx.queue.refused = ENQUEUE_REFUSED
        try:
            return await handler()
        finally:
            _execution.reset(execution)
            DURABLE_IO.reset(token)

    async def wrap_tool_body(
        self,
        ctx: RunContext[CapabilityDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        workflow_id = DBOS.workflow_id
        if workflow_id is None:
            return await handler(args)
        lock, users = self._locks.get(workflow_id, (asyncio.Lock(), 0))
        self._locks[workflow_id] = (lock, users + 1)
        try:
            async with lock:  # steps take their places in the order they start: one call at a time
                return await self._tool_steps(ctx, workflow_id, call, args, handler)
        finally:
            lock, users = self._locks[workflow_id]
            if users == 1:  # the last call of the workflow waiting or running: the lock goes
                del self._locks[workflow_id]
            else:
                self._locks[workflow_id] = (lock, users - 1)

    async def _tool_steps(
        self,
        ctx: RunContext[CapabilityDepsT],
        workflow_id: str,
        call: ToolCallPart,
        args: dict[str, Any],
        handler: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        key = f'{workflow_id}/{call.tool_call_id}'
        execution = _execution.get()

        async def execute() -> Any:
            if execution is not None and execution.replayed and not execution.ran:
                # The first step this execution runs, after steps its checkpoint answered: the
                # last execution stopped inside this call, or just before it.
                ctx.crash_retry = CrashRetry(recorded_idempotency_key() or key)
            try:
                return await handler(args)
            finally:
                ctx.crash_retry = None

        return await _run_step({'name': TOOL_CALL}, execute)


async def durable_history(store: AsyncStore[SyncStore], conversation_id: str, *, scope: str) -> list[ModelMessage]:
    """The stored history to hand a durable run: inside a workflow, the history as it stood when
    the workflow first asked (a step records its length; nothing else is checkpointed), so a
    replay after a crash starts where the first attempt did, not after what that attempt stored.
    Outside a workflow, the history as it is (empty for a conversation not stored yet)."""
    if DBOS.workflow_id is None:
        state = await store.conversation_state(conversation_id, scope=scope)
    else:
        state = await DBOS.run_step_async(
            {'name': HISTORY}, store.sync.conversation_state, conversation_id, scope=scope
        )
    if state is None:
        return []
    stored = await store.load(conversation_id, scope=scope)
    return stored.messages[: state[1]]  # the log only grows at its tip in a durable run


SYSTEM_SCHEMA = 'threadline_dbos'
"""The PostgreSQL schema DBOS's tables go in when they share the store's database."""


def dbos_config(store: object, *, name: str, **options: Any) -> DBOSConfig:
    """A DBOS configuration whose system database sits with the store's data: a SQLite file beside
    a `SQLiteStore`'s (`<file>-dbos.sqlite`) or in a `FileStore`'s directory, and the store's own
    PostgreSQL database, in the schema `threadline_dbos`, for a `PostgresStore` opened by URL.
    `options` are further DBOS settings (they win). A store with no place on disk (`MemoryStore`)
    or a `PostgresStore` given a pool is refused: name the system database yourself."""
    config: DBOSConfig = {'name': name}
    if isinstance(store, MemoryStore) or (isinstance(store, SQLiteStore) and store.path == ':memory:'):
        raise UserError('dbos_config: an in-memory store keeps nothing a restarted process could resume from')
    if isinstance(store, SQLiteStore):
        path = Path(store.path).resolve()
        system = path.with_name(path.name + '-dbos.sqlite')
        config['system_database_url'] = f'sqlite:///{system}'
        if not {'system_database_url', 'system_database_engine'} & options.keys():
            config['system_database_engine'] = _sqlite_engine(system, store.synchronous)
    elif isinstance(store, FileStore):
        config['system_database_url'] = f'sqlite:///{Path(store.root).resolve() / "dbos.sqlite"}'
    elif isinstance(store, PostgresStore):
        if store.url is None:
            raise UserError('dbos_config: this PostgresStore was given a pool; pass system_database_url= yourself')
        config['system_database_url'] = store.url
        config['dbos_system_schema'] = SYSTEM_SCHEMA
    else:
        raise UserError(f'dbos_config: no default system database for {type(store).__name__}; pass one yourself')
    config.update(options)  # type: ignore[typeddict-item]
    return config


def _sqlite_engine(path: Path, synchronous: str) -> Any:
    """The engine of a SQLite system database beside a store's: WAL, so a checkpoint's commit
    syncs the disk once (the rollback journal DBOS leaves it in syncs several times), with the
    store's own `synchronous`. With `NORMAL`, power loss may take the last checkpoints with the
    last store writes; a resumed run then repeats those steps, as after a crash before them.
    The rest is what DBOS sets on the engines it makes: writers serialized by `BEGIN IMMEDIATE`,
    a busy timeout that rides out a competing writer, and foreign keys enforced."""
    if synchronous not in {'FULL', 'NORMAL', 'EXTRA', 'OFF'}:
        raise UserError(f"dbos_config: the store's synchronous={synchronous!r} is not a SQLite setting")
    path.parent.mkdir(parents=True, exist_ok=True)
    engine = sqlalchemy.create_engine(f'sqlite:///{path}')

    @sqlalchemy.event.listens_for(engine, 'connect')
    def configure(connection: Any, record: Any) -> None:
        connection.isolation_level = 'IMMEDIATE'
        connection.execute('PRAGMA busy_timeout=30000')
        connection.execute('PRAGMA foreign_keys=ON')
        connection.execute('PRAGMA journal_mode=WAL')
        connection.execute(f'PRAGMA synchronous={synchronous}')

    return engine


async def dbos_store_step(name: str, operation: Callable[..., T], *args: Any) -> T:
    """A StepPersistence read or write as the DBOS step `threadline.store.<name>` (a `DurableIO`:
    set for a run inside a workflow by `DBOSDurability`, and by the pydantic-ai `StepPersistence`
    beside pydantic-ai's own `DBOSDurability`)."""
    result: T = await _run_step({'name': f'threadline.store.{name}'}, functools.partial(operation, *args))
    return result


class _Execution:
    """What one execution of a workflow has seen of a run's steps: whether the checkpoint answered
    any (a resumed execution), and whether any ran."""

    def __init__(self) -> None:
        self.replayed = False
        self.ran = False


_execution: contextvars.ContextVar[_Execution | None] = contextvars.ContextVar(
    'threadline_durable_execution', default=None
)


async def _run_step(options: StepOptions, body: Callable[[], Any]) -> Any:
    """`body` as a DBOS step, noting for the run (`_Execution`) whether it ran or its output came
    from the checkpoint."""
    ran = False
    if inspect.iscoroutinefunction(body):

        async def step() -> Any:
            nonlocal ran
            ran = True
            return await body()

        result = await DBOS.run_step_async(options, step)
    else:

        def plain() -> Any:
            nonlocal ran
            ran = True
            return body()

        result = await DBOS.run_step_async(options, plain)
    execution = _execution.get()
    if execution is not None:
        execution.ran |= ran
        execution.replayed |= not ran
    return result


publish('threadline.durable', globals(), __all__)  # loaded on first use, through the package
