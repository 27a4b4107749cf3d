"""`DBOSDurability`: a Threadline run that outlives its process, on DBOS Transact (extra `dbos`).

Run the agent inside a DBOS workflow and the run's model requests and tool calls become DBOS
steps. A process that dies mid-run has the workflow resumed when DBOS launches again (in the same
program or another executor on the same system database): every step that completed returns its
checkpointed output instead of running again, and the step that was in flight runs again.
Outside a workflow the capability changes nothing.

    durability = DBOSDurability()
    agent = Agent(model, name='support', capabilities=[durability])

    @DBOS.workflow(name='support_turn')
    async def support_turn(prompt: str, conversation_id: str) -> str:
        return (await agent.run(prompt, conversation_id=conversation_id, run_id=DBOS.workflow_id)).output

Steps and their names. The names are compatibility data: a workflow started under one version
resumes under the next only if the names it recorded are still made in the same order
(`tests/durable` pins them).
- `threadline.model_request`: one model request; its output is the response as wire JSON.
- `threadline.tool_started`: marks that a tool call's attempt began; its output is the call's
  idempotency key (`<workflow id>/<tool call id>`).
- `threadline.tool_call`: the tool's execution (its argument validation stays in the workflow);
  its output is what the tool returned.

Rules:
- Determinism: between steps the workflow must do the same thing when it replays. The run loop
  does, given the same inputs: so pass the run the same history (or conversation) and ids on
  every attempt (the workflow's inputs are; `run_id=DBOS.workflow_id` keys the run by the
  workflow), and keep non-determinism (clocks, random ids, reads of changing data) inside tools
  or model requests.
- A tool runs at least once per call; it runs again only if the process died while it ran.
  Then `ctx.crash_retry` holds the call's idempotency key (the same on every attempt): a tool
  with an effect outside the process looks the effect up by that key instead of repeating it. A
  tool's return value must be something DBOS can serialize.
- The tool calls of one response run one at a time inside a workflow: a step's place in the
  workflow is the order steps start in, which parallel calls would leave to chance.
- A model request that completed is never made again; the one in flight when the process died is
  made again (a provider may then have answered twice; only the last answer is kept).
- Streaming the response of a model request inside a workflow is refused with a `UserError`: the
  caller consumes a streamed response outside any step, so it could not be replayed.
- Checkpoints hold one response or one tool result each, never the history: a step's cost does
  not grow with the conversation. The workflow's own inputs are the caller's choice (prefer a
  conversation id over a history).

`dbos_config(store, name=...)` puts DBOS's system database with the store's data: a SQLite file
beside a `SQLiteStore`'s, or the `PostgresStore`'s own database in a schema of its own, so a
durable deployment needs no other server.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from dbos import DBOS, DBOSConfig, StepOptions

from threadline._public import publish
from threadline.agent import CrashRetry, RunContext
from threadline.agent.capability import AbstractCapability, CapabilityDepsT, ModelRequestContext
from threadline.exceptions import UserError
from threadline.messages import ModelMessagesTypeAdapter, ModelResponse, ToolCallPart
from threadline.messages.wire import encode_each
from threadline.models import ToolDefinition
from threadline.storage import FileStore, MemoryStore, PostgresStore, SQLiteStore

__all__ = ['STEP_NAMES', 'DBOSDurability', 'dbos_config']

MODEL_REQUEST = 'threadline.model_request'
TOOL_STARTED = 'threadline.tool_started'
TOOL_CALL = 'threadline.tool_call'
STEP_NAMES = (MODEL_REQUEST, TOOL_STARTED, TOOL_CALL)
"""Every step name this capability records (compatibility data: see the module docstring)."""

_in_step_request: contextvars.ContextVar[bool] = contextvars.ContextVar('threadline_durable_request', default=False)


class DBOSDurability(AbstractCapability[CapabilityDepsT]):
    """Model requests and tool calls of a run inside a DBOS workflow as DBOS steps (see the
    module docstring for the step names and what a tool may assume). `retries` is how many
    times DBOS itself retries a failed model request step (0: a failure goes to the run as
    usual, where the model's own retries and `FallbackModel` apply)."""

    id: str | None = 'dbos_durability'

    def __init__(self, *, retries: int = 0) -> None:
        if not isinstance(retries, int) or retries < 0:
            raise UserError(f'DBOSDurability(retries=...) must be a non-negative integer, not {retries!r}')
        self.retries = retries
        self._locks: dict[str, asyncio.Lock] = {}

    async def wrap_model_request(
        self,
        ctx: RunContext[CapabilityDepsT],
        *,
        request_context: ModelRequestContext,
        handler: Callable[[ModelRequestContext], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        if DBOS.workflow_id is None:
            return await handler(request_context)

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
        body = await DBOS.run_step_async(options, request)
        [response] = ModelMessagesTypeAdapter.validate_json(f'[{body}]'.encode())
        assert isinstance(response, ModelResponse)  # a step only ever records a response
        return response

    async def before_model_request(
        self, ctx: RunContext[CapabilityDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        if DBOS.workflow_id is not None and not _in_step_request.get():
            raise UserError(
                'a streamed model request inside a DBOS workflow cannot be made durable (its response is consumed '
                'outside any step); use agent.run() in the workflow, or stream outside it'
            )
        return request_context

    async def wrap_tool_execute(
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
        lock = self._locks.setdefault(workflow_id, asyncio.Lock())
        try:
            async with lock:  # steps take their places in the order they start: one call at a time
                return await self._tool_steps(ctx, workflow_id, call, args, handler)
        finally:
            if not lock.locked():
                self._locks.pop(workflow_id, None)

    async def _tool_steps(
        self,
        ctx: RunContext[CapabilityDepsT],
        workflow_id: str,
        call: ToolCallPart,
        args: dict[str, Any],
        handler: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        attempts = _Attempts()
        key = await DBOS.run_step_async({'name': TOOL_STARTED}, attempts.first, f'{workflow_id}/{call.tool_call_id}')

        async def execute() -> Any:
            if attempts.replayed:  # the call began before, and did not finish: the process died in it
                ctx.crash_retry = CrashRetry(key)
            try:
                return await handler(args)
            finally:
                ctx.crash_retry = None

        return await DBOS.run_step_async({'name': TOOL_CALL}, execute)


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
        config['system_database_url'] = f'sqlite:///{path.with_name(path.name + "-dbos.sqlite")}'
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


class _Attempts:
    """Tells a step that ran now from one whose output came from the checkpoint."""

    def __init__(self) -> None:
        self.replayed = True

    def first(self, key: str) -> str:
        self.replayed = False
        return key


publish('threadline.durable', globals(), __all__)  # loaded on first use, through the package
