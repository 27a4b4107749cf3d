"""`threadline serve --durable`: every turn a DBOS workflow, finished after a crash by the server
itself on restart or by another server on the same databases (extra `dbos`).

Rules (each tested):
- A turn is the workflow `threadline.serve.turn` (a pinned name: workflows in flight resume
  under it), run over the agent with `DBOSDurability`. Its inputs are the scope, the stored
  conversation id, the new user turn (one request as wire JSON), the approvals, the turn lease's
  holder and the revision and length the history had when the turn was admitted: never the
  history, so its checkpoints do not grow with the conversation.
- The turn lease and the revision rules are the server's usual ones (`_turns`, `_app`): the
  request waits in the conversation's line under the workflow's holder (a 409 after
  `turn_wait`), and from then on the workflow holds the lease, renewed, until the turn is
  stored or has failed, even when the client went away. A workflow resumed after a crash claims
  the lease again under the same holder: at once when it lapsed, else in line.
- The finished turn is stored once, in one step that names the admitted revision: a replay that
  finds its run already stored (the crash came between the commit and the checkpoint) takes the
  stored revision. A conversation changed meanwhile fails the turn with the usual conflict,
  storing nothing.
- The request that started a turn sees its events live (responses stream inside their steps);
  a resumed turn streams to no one. A client that reloads sees `finishing: true` on the
  conversation while one of its turns is pending, and the stored turn once it is done.
- Recovery: a server recovers its own pending turns when DBOS launches again under the same
  executor id. Each server also keeps a heartbeat (a lease in the store, scope
  `threadline.serve/executors/<executor id>`) and checks those of the executors with pending turns; the first
  live server to take a dead executor's heartbeat has DBOS recover that executor's workflows
  (what the DBOS admin endpoint `/dbos-workflow-recovery` does), so a turn whose server never
  comes back is finished by another. With DBOS Conductor, Conductor does this instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from typing import Any

from dbos import DBOS, SetWorkflowID

from threadline.agent import Agent, AgentRunResult, DeferredToolResults, RunContext, ToolDenied
from threadline.audit import audit_events_from_sanitize
from threadline.durable import DBOSDurability
from threadline.exceptions import ConflictError
from threadline.messages import (
    AgentRunResultEvent,
    AgentStreamEvent,
    ModelMessagesTypeAdapter,
    ModelRequest,
    StrippedItem,
    UserContent,
    UserPromptPart,
)
from threadline.messages.wire import encode_each
from threadline.server._branching import branch_point
from threadline.server._turns import TurnGate
from threadline.storage import AsyncStore, SyncStore

__all__ = ['TURN_WORKFLOW', 'DurableTurns']

logger = logging.getLogger('threadline.server')

TURN_WORKFLOW = 'threadline.serve.turn'
SAVE_STEP = 'threadline.serve.save'
EXECUTORS = 'threadline.serve/executors'  # the scope of the servers' heartbeats in the store

_active: DurableTurns | None = None  # the server whose agent and store the workflows run on


class DurableTurns:
    """The durable turns of one server (see the module docstring). DBOS must be configured
    (`DBOS(config=dbos_config(store, ...))`) before `start()` launches it."""

    def __init__(self, store: AsyncStore[SyncStore], agent: Agent[Any, Any], gate: TurnGate) -> None:
        self.store, self.agent, self.gate = store, agent, gate
        # The agent's own DBOSDurability if it has one, else one for the server's runs.
        self.extra = [] if any(isinstance(c, DBOSDurability) for c in agent.capabilities) else [DBOSDurability()]
        self.relays: dict[str, _Relay] = {}
        self._watch: asyncio.Task[None] | None = None

    # -- a turn ------------------------------------------------------------------------------------
    async def turn(
        self,
        scope: str,
        cid: str,
        prompt: str | Sequence[UserContent] | None,
        stripped: list[StrippedItem],
        deferred: DeferredToolResults | None,
        expected: int | None,
        earlier: Sequence[Sequence[str]] | None = None,
    ) -> AsyncIterator[AgentStreamEvent | AgentRunResultEvent]:
        """Admit the turn (in the conversation's line), then start its workflow; its events.
        `expected`: the revision an approval was checked against (changed since: a conflict);
        `earlier`: the user turns before a turn answered again, stored on a new branch."""
        holder = self.gate.holder()
        await self.gate.admit(scope, cid, holder)
        try:
            state = await self.store.conversation_state(cid, scope=scope)
            if expected is not None and (state is None or state[0] != expected):
                raise ConflictError(
                    f'conversation {cid!r} changed before this could run: reload it', conversation_id=cid
                )
            if stripped and state is not None:  # a new conversation's are recorded once it is stored
                events = audit_events_from_sanitize(stripped, conversation_id=cid)
                await self.store.record_audit_events(cid, events, scope=scope)
            kept = [dataclasses.asdict(s) for s in stripped] if state is None else []
            branch = None
            if earlier is not None and state is not None:
                branch = branch_point((await self.store.load(cid, scope=scope)).messages, earlier)
            inputs = (scope, cid, _request(prompt), _approvals(deferred), kept, state, holder, branch)
            return await self._start(_key(scope, cid), inputs)
        except BaseException:
            await self.store.release_turn(cid, scope=scope, holder=holder)
            raise

    async def _start(self, key: str, inputs: tuple[Any, ...]) -> AsyncIterator[AgentStreamEvent | AgentRunResultEvent]:
        """Start a turn's workflow with `inputs` (the caller holds the lease); its events."""
        workflow_id = f'turn-{key}-{uuid.uuid4().hex}'
        relay = self.relays[workflow_id] = _Relay()
        try:
            with SetWorkflowID(workflow_id):
                await DBOS.start_workflow_async(serve_turn, *inputs)
        except BaseException:
            self.relays.pop(workflow_id, None)
            raise
        return relay.events(lambda: self.relays.pop(workflow_id, None))

    async def finishing(self, scope: str, cid: str) -> bool:
        """Whether a turn of this conversation is pending and streams to no client here."""
        pending = await DBOS.list_workflows_async(
            status=['PENDING', 'ENQUEUED'],
            workflow_id_prefix=f'turn-{_key(scope, cid)}-',
            load_input=False,
            load_output=False,
        )
        return any(w.workflow_id not in self.relays for w in pending)

    async def run(self, workflow_id: str, *args: Any) -> int:
        scope, cid, request, approvals, stripped, state, holder, *rest = args
        branch = rest[0] if rest else None  # a workflow a server before branches started has 7 inputs
        if branch is not None and state is not None:
            state = (state[0], branch)  # the run's history, and the save's branch, end there
        async with self.gate.hold(scope, cid, holder):
            relay = self.relays.get(workflow_id)
            try:
                result = await self._run(workflow_id, scope, cid, request, approvals, state, relay)
                revision: int = await DBOS.run_step_async(
                    {'name': SAVE_STEP}, self._save_once, result, scope, cid, state, stripped, branch
                )
            except BaseException as error:
                if relay is not None:
                    relay.put(error)
                raise
            if relay is not None:
                relay.put(AgentRunResultEvent(result))
            return revision

    async def _run(
        self,
        workflow_id: str,
        scope: str,
        cid: str,
        request: str | None,
        approvals: dict[str, bool] | None,
        state: tuple[int, int] | None,
        relay: _Relay | None,
    ) -> AgentRunResult[Any]:
        history = (await self.store.load(cid, scope=scope)).messages[: state[1]] if state else []
        prompt = None
        if request is not None:
            [message] = ModelMessagesTypeAdapter.validate_json(f'[{request}]'.encode())
            assert isinstance(message, ModelRequest) and isinstance(message.parts[0], UserPromptPart)
            prompt = message.parts[0].content
        deferred = None
        if approvals is not None:
            deferred = DeferredToolResults(approvals={k: True if v else ToolDenied() for k, v in approvals.items()})

        async def forward(ctx: RunContext[Any], events: AsyncIterable[AgentStreamEvent]) -> None:
            async for event in events:
                if relay is not None:
                    relay.put(event)

        return await self.agent.run(
            prompt,
            message_history=history,
            conversation_id=cid,
            run_id=workflow_id,
            deferred_tool_results=deferred,
            event_stream_handler=forward,
            capabilities=self.extra,
        )

    def _save_once(
        self,
        result: AgentRunResult[Any],
        scope: str,
        cid: str,
        state: tuple[int, int] | None,
        stripped: list[dict[str, Any]],
        branch: int | None = None,
    ) -> int:
        """The turn stored, naming the admitted revision; a run stored before (the step's commit
        outlived its checkpoint) is not stored again."""
        store = self.store.sync
        recorded = store.get_run(result.run_id, scope=scope) if result.run_id else None
        if recorded is not None and recorded.status == 'completed':
            now = store.conversation_state(cid, scope=scope)
            assert now is not None  # the run is in it
            return now[0]
        try:
            revision = store.save(
                result,
                scope=scope,
                conversation_id=cid,
                expected_revision=state[0] if state else None,
                branch_at=branch,
            )
        except ConflictError:
            raise ConflictError(
                f'conversation {cid!r} changed while this turn ran (another tab or client): reload it and send again',
                conversation_id=cid,
            ) from None
        if stripped and state is None:  # a new conversation's are recorded once it is stored
            items = [StrippedItem(**s) for s in stripped]
            store.record_audit_events(cid, audit_events_from_sanitize(items, conversation_id=cid), scope=scope)
        return revision

    # -- the server's life -------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def lifespan(self, app: object) -> AsyncIterator[None]:
        """The app's life: DBOS launched at its start, shut down at its end."""
        self.start()
        try:
            yield
        finally:
            await self.stop()

    def start(self) -> None:
        """Launch DBOS (resuming this executor's pending turns) and the peer watch."""
        global _active
        _active = self
        DBOS.launch()
        self._watch = asyncio.get_running_loop().create_task(self._watch_peers())

    async def stop(self, *, finish_within: int = 30) -> None:
        """Stop watching, let turns in flight finish (`finish_within` s), and shut DBOS down."""
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        await asyncio.to_thread(DBOS.destroy, workflow_completion_timeout_sec=finish_within)

    async def _watch_peers(self) -> None:
        me = DBOS.executor_id
        ttl = self.gate.ttl
        while True:
            try:
                await self.store.claim_turn('heartbeat', scope=f'{EXECUTORS}/{me}', holder=me, ttl=ttl)
                await self._recover_dead(me, ttl)
            except Exception as error:  # noqa: BLE001 - the watch outlives a failed round
                logger.warning('durable turns: the peer watch failed a round with %s', type(error).__name__)
            await asyncio.sleep(ttl / 3)

    async def _recover_dead(self, me: str, ttl: float) -> None:
        pending = await DBOS.list_workflows_async(
            status='PENDING', name=TURN_WORKFLOW, load_input=False, load_output=False
        )
        for executor in sorted({w.executor_id for w in pending if w.executor_id and w.executor_id != me}):
            probe = f'{me}:recovering'
            # Taking a heartbeat means its server renewed it for no `ttl`: dead (or stalled, and
            # then the lease and revision rules keep its turn from being stored twice).
            if await self.store.claim_turn('heartbeat', scope=f'{EXECUTORS}/{executor}', holder=probe, ttl=ttl):
                logger.warning('durable turns: recovering the pending turns of a server that stopped')
                await asyncio.to_thread(DBOS._recover_pending_workflows, [executor])
            await self.store.release_turn('heartbeat', scope=f'{EXECUTORS}/{executor}', holder=probe)


@DBOS.workflow(name=TURN_WORKFLOW)
async def serve_turn(*args: Any) -> int:
    """One durable turn (see `DurableTurns.run`)."""
    if _active is None:
        raise RuntimeError('a durable turn resumed in a process that serves none (start threadline serve --durable)')
    workflow_id = DBOS.workflow_id
    assert workflow_id is not None  # DBOS runs this only as a workflow
    return await _active.run(workflow_id, *args)


def _request(prompt: str | Sequence[UserContent] | None) -> str | None:
    """The new user turn as a workflow input: one request's wire JSON."""
    if prompt is None:
        return None
    part = UserPromptPart(prompt if isinstance(prompt, str) else list(prompt))
    return encode_each([ModelRequest(parts=[part])])[0].decode()


def _approvals(deferred: DeferredToolResults | None) -> dict[str, bool] | None:
    return None if deferred is None else {k: v is True for k, v in deferred.approvals.items()}


def _key(scope: str, cid: str) -> str:
    """The conversation's part of its turns' workflow ids: fixed, and telling scopes apart."""
    return hashlib.sha256(f'{scope}\0{cid}'.encode()).hexdigest()[:24]


class _Relay:
    """A turn's events from its workflow to the request that started it, across threads."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[object] = asyncio.Queue()

    def put(self, item: object) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, item)

    async def events(self, done: Any) -> AsyncIterator[AgentStreamEvent | AgentRunResultEvent]:
        try:
            while True:
                item = await self.queue.get()
                if isinstance(item, BaseException):
                    raise item
                yield item  # type: ignore[misc]
                if isinstance(item, AgentRunResultEvent):
                    return
        finally:
            done()
