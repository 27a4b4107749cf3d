"""The chat server's ASGI app (Starlette; extra `server`): the Vercel AI and AG-UI chat endpoints
over a Threadline store, and the conversation endpoints a chat UI needs.

Rules (each tested):
- Auth: every `/api/` request names an API key (`Authorization: Bearer <key>` or `X-API-Key`); the
  key maps to the caller's scope (tenant), and every store call uses that scope. No key, or an
  unknown one, is 401. Keys are compared in constant time and never logged. With no keys
  configured (`keys=None`) the app is in dev mode: one local scope, no key needed; `threadline
  serve` then binds to 127.0.0.1 only.
- Another tenant's conversation is a 404, never a 403 (the store treats it as not found).
- Server-held history: a chat request names its conversation (Vercel `id`, AG-UI `threadId`), a
  chat id in the caller's own space (`_ids.ChatIds`: another tenant's equal id is another
  conversation), and only its new user turn is used; the history comes from the store. What a client sends is
  untrusted: it is sanitized, and what was stripped is recorded as content-free audit events.
- Bad input: a body that is not the protocol's shape is a 400 naming the field
  (`messages[0].parts[0].type`), never quoting its value; a body over `max_body` bytes is a 413,
  counted as it is read; a body not sent as `application/json` is a 415 (`_requests`). Pages of
  other sites and rebinding hosts are a 403 (`_origin`).
- Writes: one turn of a conversation runs at a time, on this server and across servers sharing
  the store, in the order the turns arrived (`_turns.TurnGate`: the store's turn lease and its
  line); a turn waits for the one before it and runs over the history as stored when its turn
  comes. A turn still waiting
  after `turn_wait` seconds is a 409 before anything streams, as is an approval whose
  conversation changed since it was checked. A run's new messages are saved when it finishes,
  naming the revision it started from, so even a turn whose lease lapsed never overwrites or
  interleaves another's: its stream ends with an error chunk and nothing of it is stored.
  A model error ends the stream with an error chunk and stores nothing of that run.
- Failures: the error chunk says which kind of failure it was, never the error's text
  (`ui._errors.public_error`); the log names the error's type, that kind and the request's id,
  which every response carries as `x-request-id` (`_request_ids`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from threadline.agent import Agent, AgentRunResult, DeferredToolResults, ToolDenied
from threadline.audit import audit_events_from_sanitize
from threadline.exceptions import ConflictError, ConversationNotFound, SearchQueryTooLarge, UserError
from threadline.messages import (
    AgentRunResultEvent,
    AgentStreamEvent,
    ModelMessage,
    StrippedItem,
    UserContent,
)
from threadline.server._audit import ServerAudit
from threadline.server._auth import DEV_SCOPE, ApiKeyBackend, ScopeUser, refuse
from threadline.server._branching import branch_point, earlier_turns
from threadline.server._ids import ChatIds
from threadline.server._origin import SameOriginGuard
from threadline.server._request_ids import RequestIds, request_id_of
from threadline.server._requests import (
    HTTPProblem,
    body_bytes,
    conversation_id,
    field,
    json_body,
    new_turn,
    paused_calls,
    query_int,
)
from threadline.server._stateless import DEFAULT_TTL, read_body, signed_chunks, verified_history
from threadline.server._turns import TurnBusy, TurnGate, closing_events, turn_response
from threadline.server._views import hit_json, summary_json
from threadline.storage import AsyncStore, StoredConversation, SyncStore
from threadline.trust import Keyring
from threadline.ui.vercel_ai import STREAM_HEADERS, VercelAIAdapter, sse, ui_message_chunks

if TYPE_CHECKING:
    from threadline.server._durable import DurableTurns

__all__ = ['DEV_SCOPE', 'create_app']

logger = logging.getLogger('threadline.server')

Prompt = str | Sequence[UserContent] | None
RunEvent = AgentStreamEvent | AgentRunResultEvent
Encoder = Callable[[AsyncIterator[RunEvent]], AsyncIterator[str]]


class TurnAgent(Protocol):
    """What the server runs a turn with: Threadline's `Agent`, or another agent given that face
    (`threadline.pydantic_ai.ServedAgent` for a pydantic-ai one)."""

    def run_stream_events(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        *,
        message_history: Sequence[ModelMessage] = ...,
        conversation_id: str | None = ...,
        deferred_tool_results: DeferredToolResults | None = ...,
    ) -> AsyncIterator[RunEvent]: ...


def create_app(
    store: AsyncStore[SyncStore],
    agent: Agent[Any, Any] | TurnAgent,
    *,
    keys: Mapping[str, str] | None = None,
    max_body: int = 1_000_000,
    stateless: Keyring | None = None,
    turn_wait: float = 15.0,
    lease_ttl: float = 60.0,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] = (),
    envelope_ttl: float = DEFAULT_TTL.total_seconds(),
    durable: bool = False,
    expect_outcome: bool = False,
) -> Starlette:
    """The app: `keys` maps API keys to scopes (None: dev mode, one local scope). With
    `stateless=<Keyring>` the chat endpoint keeps nothing: the client holds the history (see
    `_Server.chat_stateless`). `turn_wait`: how long a turn waits for the conversation's turn
    before a 409; `lease_ttl`: how long a server that died mid-turn blocks its conversation.
    `allowed_hosts` / `allowed_origins`: which `Host` the server answers for and which other
    sites' pages may call it (see `_origin.SameOriginGuard`). `envelope_ttl`: how many seconds a
    stateless answer's envelope is accepted for (see `_stateless`). `durable=True` runs each turn
    as a DBOS workflow (see `_durable`; extra `dbos`, DBOS configured before the app starts).
    `expect_outcome=True`: the audit asks every conversation's last run for an outcome receipt;
    without it, only runs that called one of the agent's tools marked `external_effects` owe one."""
    static = Path(__file__).with_name('static')

    server = _Server(store, agent, max_body)
    server.ids = ChatIds(store, tenants=keys is not None)
    server.turns = TurnGate(store, ttl=lease_ttl, wait=turn_wait)
    server.trust = stateless
    server.envelope_ttl = timedelta(seconds=envelope_ttl)
    server.auditing = ServerAudit.of(agent, expect_outcome=expect_outcome)
    if durable:
        if stateless is not None or not isinstance(agent, Agent):
            raise UserError('durable turns need history held by the server and a Threadline Agent')
        from threadline.server._durable import DurableTurns  # extra `dbos`: only a durable server loads it

        server.durable = DurableTurns(store, agent, server.turns)
    routes = [
        Route('/healthz', server.health, methods=['GET']),
        Route('/api/chat', server.chat_stateless if stateless else server.chat, methods=['POST']),
        Route('/api/ag-ui', server.ag_ui_refused if stateless else server.ag_ui, methods=['POST']),
        Route('/api/conversations', server.conversations, methods=['GET']),
        Route('/api/conversations/{cid}', server.conversation, methods=['GET', 'DELETE']),
        Route('/api/conversations/{cid}/fork', server.fork, methods=['POST']),
        Route('/api/conversations/{cid}/audit', server.audit, methods=['GET']),
        Route('/api/conversations/{cid}/approvals', server.approvals, methods=['POST']),
        Route('/', lambda request: FileResponse(static / 'index.html'), methods=['GET']),
        Route(
            '/favicon.ico', lambda r: FileResponse(static / 'favicon.svg', media_type='image/svg+xml'), methods=['GET']
        ),
        Mount('/static', StaticFiles(directory=static), name='static'),
    ]
    guard = Middleware(
        SameOriginGuard, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins, dev_mode=keys is None
    )
    auth = Middleware(AuthenticationMiddleware, backend=ApiKeyBackend(keys), on_error=refuse)
    return Starlette(
        routes=routes,
        middleware=[Middleware(RequestIds), guard, auth],
        exception_handlers={HTTPProblem: _Server.problem_handler},
        lifespan=server.durable.lifespan if server.durable else None,
    )


class _Server:
    def __init__(self, store: AsyncStore[SyncStore], agent: Agent[Any, Any] | TurnAgent, max_body: int):
        self.store, self.agent, self.max_body = store, agent, max_body
        self.trust: Keyring | None = None
        self.envelope_ttl = DEFAULT_TTL
        self.turns = TurnGate(store)
        self.ids = ChatIds(store, tenants=False)
        self.durable: DurableTurns | None = None
        self.auditing = ServerAudit()

    # -- plumbing ---------------------------------------------------------------------------------
    @staticmethod
    def scope(request: Request) -> str:
        """The caller's scope, as `ApiKeyBackend` authenticated it (see `_auth.py`)."""
        user = request.user
        if not isinstance(user, ScopeUser):  # only /api/ routes are authenticated, and only they ask
            raise HTTPProblem(401, 'an API key is required (Authorization: Bearer <key>)')
        return user.scope

    async def body(self, request: Request) -> object:
        return await json_body(request, self.max_body)

    @staticmethod
    def cid(request: Request) -> str:
        return conversation_id(request.path_params['cid'], 'the conversation id')

    @staticmethod
    async def problem_handler(request: Request, error: Exception) -> Response:
        """An `HTTPProblem` raised before an endpoint's `handle` (reading a path id, say)."""
        assert isinstance(error, HTTPProblem)  # registered for HTTPProblem only
        return _Server.problem(error)

    @staticmethod
    def problem(error: HTTPProblem) -> Response:
        return JSONResponse({'error': error.message}, status_code=error.status)

    async def handle(self, request: Request, action: Callable[[str], Awaitable[Response]]) -> Response:
        try:
            return await action(self.scope(request))
        except HTTPProblem as error:
            return self.problem(error)
        except ConversationNotFound:
            return self.problem(HTTPProblem(404, 'no such conversation'))
        except (TurnBusy, ConflictError) as busy:
            return self.problem(HTTPProblem(409, str(busy)))
        except SearchQueryTooLarge as large:
            return self.problem(HTTPProblem(400, f'q: {large}'))
        except UserError:
            # The store refused a value the request carried; its message may quote that value.
            return self.problem(HTTPProblem(400, 'the request holds a value the store does not accept'))

    # -- endpoints --------------------------------------------------------------------------------
    async def health(self, request: Request) -> Response:
        return JSONResponse({'ok': True})

    async def conversations(self, request: Request) -> Response:
        async def action(scope: str) -> Response:
            limit = query_int(request.query_params.get('limit'), 50, 'limit', low=1)
            offset = query_int(request.query_params.get('offset'), 0, 'offset')
            query = request.query_params.get('q')
            if query is not None and not query.isprintable():
                raise HTTPProblem(400, 'q: must not hold control characters')
            if query:
                hits = await self.store.search(query, scope=scope, limit=limit)
                return JSONResponse({'hits': [hit_json(h, self.ids.chat(scope, h.conversation_id)) for h in hits]})
            rows = await self.store.list(scope, limit=limit, offset=offset)
            listed = [summary_json(r, lambda stored_id: self.ids.chat(scope, stored_id)) for r in rows]
            return JSONResponse({'conversations': listed, 'limit': limit, 'offset': offset})

        return await self.handle(request, action)

    async def conversation(self, request: Request) -> Response:
        cid = self.cid(request)

        async def action(scope: str) -> Response:
            stored_id = await self.ids.stored(scope, cid)
            if request.method == 'DELETE':
                await self.store.load(stored_id, scope=scope, last=1)  # another scope's is not found: 404
                await self.store.delete(stored_id, scope=scope)
                return Response(status_code=204)
            finishing = self.durable is not None and await self.durable.finishing(scope, stored_id)
            stored = await self._stored(stored_id, scope)
            if stored is None and finishing:  # a first turn a durable server is finishing
                return JSONResponse({'id': cid, 'revision': 0, 'title': None, 'finishing': True, 'messages': []})
            if stored is None:
                raise ConversationNotFound(stored_id)
            ui = VercelAIAdapter.dump_messages(stored.messages)
            return JSONResponse(
                {
                    'id': cid,
                    'revision': stored.revision,
                    'title': stored.title,
                    'finishing': finishing,
                    'messages': [m.model_dump(mode='json', by_alias=True, exclude_none=True) for m in ui],
                }
            )

        return await self.handle(request, action)

    async def fork(self, request: Request) -> Response:
        cid = self.cid(request)

        async def action(scope: str) -> Response:
            forked = await self.store.fork(await self.ids.stored(scope, cid), scope=scope)
            return JSONResponse({'id': self.ids.chat(scope, forked)}, status_code=201)

        return await self.handle(request, action)

    async def audit(self, request: Request) -> Response:
        cid = self.cid(request)

        async def action(scope: str) -> Response:
            stored_id = await self.ids.stored(scope, cid)
            stored = await self.store.load(stored_id, scope=scope)
            return JSONResponse(self.auditing.report(self.store, scope, stored_id, stored))

        return await self.handle(request, action)

    async def chat(self, request: Request) -> Response:
        async def action(scope: str) -> Response:
            body = await self.body(request)
            cid, messages = conversation_id(field(body, 'id', str), 'id'), field(body, 'messages', list)
            prompt, stripped = new_turn(VercelAIAdapter.load_messages_report, messages[-1:], len(messages) - 1)
            earlier = earlier_turns(body, messages)  # a regenerate or an edit: see `_branching`
            stored_id = await self.ids.stored(scope, cid)
            return await self._turn(
                stored_id,
                scope,
                prompt,
                stripped,
                lambda e: sse(ui_message_chunks(e, request_id=request_id_of(request))),
                STREAM_HEADERS,
                earlier=earlier,
            )

        return await self.handle(request, action)

    async def chat_stateless(self, request: Request) -> Response:
        """Stateless mode: the client holds the history. Rules:
        - the body carries `history` (Threadline's JSON of the conversation so far) and the
          `envelope` the server signed it with, both from the previous answer (neither on a
          first turn), beside the UI `messages` whose last one is the new turn;
        - a history without a valid envelope for this conversation and scope, or with anything
          added but user turns, is refused: 400 `UNTRUSTED_HISTORY` with the reason;
        - the answer's stream ends with a `data-threadline` chunk carrying the new history and
          its envelope, for the next request; nothing is stored on the server;
        - a regenerate or an edit (`trigger`, `messageId`) answers that turn again over the
          signed history before it (`_branching`), so the new history holds the turn once."""

        async def action(scope: str) -> Response:
            assert self.trust is not None
            held = read_body(await body_bytes(request, self.max_body))
            body = held.fields
            cid, messages = conversation_id(field(body, 'id', str), 'id'), field(body, 'messages', list)
            prompt, _ = new_turn(VercelAIAdapter.load_messages_report, messages[-1:], len(messages) - 1)
            verified = verified_history(held, cid, scope, self.trust)
            earlier = earlier_turns(body, messages)  # a regenerate or an edit answers that turn again
            cut = branch_point(verified.messages, earlier) if earlier is not None else None
            history = verified.messages[:cut]
            events = closing_events(self.agent.run_stream_events(prompt, message_history=history, conversation_id=cid))
            chunks = signed_chunks(
                events, cid, scope, self.trust, self.envelope_ttl, request_id_of(request), verified=verified
            )
            return StreamingResponse(sse(chunks), headers=STREAM_HEADERS)

        return await self.handle(request, action)

    async def approvals(self, request: Request) -> Response:
        """Resume a run paused on tool calls that need approval. Rules: the pause is the server's
        (the stored conversation ends with the response that made the calls, and the results of
        the calls that ran at once); the pending calls are that response's calls with no result
        yet; the request names each by id with `true` (approve) or `false` (deny); an id that is
        not pending is a 400. The resumed run streams like a chat turn and is saved the same way."""
        cid = self.cid(request)

        async def action(scope: str) -> Response:
            decisions = field(await self.body(request), 'approvals', dict)
            stored_id = await self.ids.stored(scope, cid)
            stored = await self.store.load(stored_id, scope=scope, last=2)  # the pause is in the tail
            pending = paused_calls(stored.messages)
            unknown = sorted(set(decisions) - pending)
            if unknown or not decisions or not all(isinstance(v, bool) for v in decisions.values()):
                raise HTTPProblem(
                    400,
                    'approvals: name pending tool calls of this conversation with true or false '
                    f'({len(unknown)} named that are not pending)',
                )
            results = DeferredToolResults(approvals={k: True if v else ToolDenied() for k, v in decisions.items()})
            return await self._turn(
                stored_id,
                scope,
                None,
                [],
                lambda e: sse(ui_message_chunks(e, request_id=request_id_of(request))),
                STREAM_HEADERS,
                deferred=results,
                expected=stored.revision,
            )

        return await self.handle(request, action)

    async def ag_ui_refused(self, request: Request) -> Response:
        """A stateless server keeps no history, and AG-UI's turns would need it kept."""
        return self.problem(
            HTTPProblem(400, 'AG-UI needs a server that keeps history: this one is stateless (use /api/chat)')
        )

    async def ag_ui(self, request: Request) -> Response:
        from threadline.ui.ag_ui import AGUIAdapter, ag_ui_events, encode  # extra `ui`: only this endpoint needs it

        async def action(scope: str) -> Response:
            body = await self.body(request)
            cid, run_id = conversation_id(field(body, 'threadId', str), 'threadId'), field(body, 'runId', str)
            messages = field(body, 'messages', list)
            prompt, stripped = new_turn(AGUIAdapter.load_messages_report, messages[-1:], len(messages) - 1)

            async def frames(events: AsyncIterator[RunEvent]) -> AsyncIterator[str]:
                async for event in ag_ui_events(
                    events, thread_id=cid, run_id=run_id, client_messages=messages, request_id=request_id_of(request)
                ):
                    yield encode(event)

            stored_id = await self.ids.stored(scope, cid)
            return await self._turn(stored_id, scope, prompt, stripped, frames, {'content-type': 'text/event-stream'})

        return await self.handle(request, action)

    # -- runs -------------------------------------------------------------------------------------
    async def _stored(self, cid: str, scope: str) -> StoredConversation | None:
        try:
            return await self.store.load(cid, scope=scope)
        except ConversationNotFound:
            return None

    async def _record_stripped(self, cid: str, scope: str, stripped: list[StrippedItem], exists: bool) -> None:
        if stripped and exists:  # a new conversation's are recorded once its first turn is stored
            await self.store.record_audit_events(
                cid, audit_events_from_sanitize(stripped, conversation_id=cid), scope=scope
            )

    async def _turn(
        self,
        cid: str,
        scope: str,
        prompt: Prompt,
        stripped: list[StrippedItem],
        body: Encoder,
        headers: Mapping[str, str],
        *,
        deferred: DeferredToolResults | None = None,
        expected: int | None = None,
        earlier: Sequence[Sequence[str]] | None = None,
    ) -> Response:
        """The streamed response of one turn, once it is this conversation's turn (see `TurnGate`);
        the turn ends when the response does (a durable one when its workflow does).
        `expected`: the revision the request was checked against (an approval); a conversation
        changed since is a 409. `earlier`: the user turns before the one the request answers again
        (a regenerate or an edit), which is then stored on a new branch (`_branching`)."""
        if self.durable is not None:
            events = await self.durable.turn(scope, cid, prompt, stripped, deferred, expected, earlier)
            return StreamingResponse(body(events), headers=dict(headers))
        leave = await self.turns.enter(scope, cid)
        try:
            stored = await self._stored(cid, scope)
            if expected is not None and (stored is None or stored.revision != expected):
                raise ConflictError(
                    f'conversation {cid!r} changed before this could run: reload it', conversation_id=cid
                )
            branch = branch_point(stored.messages, earlier) if earlier is not None and stored is not None else None
            events = self._events(cid, scope, stored, prompt, stripped, deferred, branch)
            return turn_response(body(events), leave, headers)
        except BaseException:
            await leave()
            raise

    async def _events(
        self,
        cid: str,
        scope: str,
        stored: StoredConversation | None,
        prompt: Prompt,
        stripped: list[StrippedItem],
        deferred: DeferredToolResults | None,
        branch: int | None,
    ) -> AsyncIterator[RunEvent]:
        """The run's events over the stored history (its first `branch` messages, for a turn
        answered again); the new messages are saved before the final event goes out, and what the
        turn stripped is recorded (for a new conversation, once stored)."""

        await self._record_stripped(cid, scope, stripped, stored is not None)
        runs = self.agent.run_stream_events(
            prompt,
            message_history=stored.messages[:branch] if stored is not None else [],
            conversation_id=cid,
            deferred_tool_results=deferred,
        )
        async for event in closing_events(runs):
            if isinstance(event, AgentRunResultEvent):
                await self._save(event.result, cid, scope, stored, branch)
                if stored is None:
                    await self._record_stripped(cid, scope, stripped, True)
            yield event

    async def _save(
        self, result: AgentRunResult[Any], cid: str, scope: str, stored: StoredConversation | None, branch: int | None
    ) -> None:
        try:
            await self.store.save(
                result,
                scope=scope,
                conversation_id=cid,
                expected_revision=stored.revision if stored else None,
                branch_at=branch,
            )
        except ConflictError:
            raise ConflictError(
                f'conversation {cid!r} changed while this turn ran (another tab or client): reload it and send again',
                conversation_id=cid,
            ) from None
