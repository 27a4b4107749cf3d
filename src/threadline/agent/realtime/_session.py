"""`RealtimeSession`: a live conversation with a realtime model, building an ordinary history."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from threadline._uuid import uuid7
from threadline.agent._run_setup import new_state
from threadline.agent.realtime._model import RealtimeConnection, RealtimeModel, RealtimeModelEvent, RealtimeTurnComplete
from threadline.agent.tools._reveal import revealed
from threadline.agent.tools._tool import ToolArgsError
from threadline.exceptions import ModelRetry, UserError
from threadline.messages import (
    EnqueuedMessagesEvent,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    RunUsage,
    SystemPromptPart,
    TextContent,
    ToolCallPart,
    ToolReturn,
    ToolReturnPart,
    UserPromptPart,
)

if TYPE_CHECKING:
    from threadline.agent import Agent
    from threadline.agent._state import RunState

__all__ = ['AgentRealtime', 'RealtimeSession', 'RealtimeToolResult']


class _Wake:
    """The type of `_WAKE`: a nudge into the inbox so the loop looks at the queues again."""


_WAKE = _Wake()


@dataclass(frozen=True)
class RealtimeToolResult:
    """The session ran a tool the model called; `part` is the result sent back and recorded."""

    part: ToolReturnPart


@dataclass
class _Pending:
    enqueue_id: str
    parts: list[ModelRequestPart]


class AgentRealtime:
    """`agent.realtime(model)`: opens sessions of `agent` on a realtime model."""

    def __init__(self, agent: Agent[Any, Any], model: RealtimeModel) -> None:
        if not isinstance(model, RealtimeModel):
            raise UserError(f'agent.realtime() needs a RealtimeModel, not {type(model).__name__}')
        self.agent, self.model = agent, model

    @asynccontextmanager
    async def session(
        self,
        *,
        deps: Any = None,
        message_history: Sequence[ModelMessage] | None = None,
        conversation_id: str | None = None,
        run_id: str | None = None,
    ) -> AsyncIterator[RealtimeSession]:
        """A session over `message_history` (ids as for runs: the conversation id is inherited)."""
        state = new_state(
            self.agent,
            None,
            message_history=message_history,
            model=self.model,
            deps=deps,
            run_id=run_id,
            conversation_id=conversation_id,
        )
        _refuse_deferred_tools(state)
        tools = (await state.request_parameters()).function_tools
        async with self.model.connect(
            instructions=await state.instructions(), tools=tools, history=list(state.history)
        ) as connection:
            session = RealtimeSession(state, connection)
            try:
                yield session
            finally:
                session._closed = True


class RealtimeSession:
    """A live conversation. Rules (each tested):
    - Iterate it (`async for event in session`) to drive it: it delivers queued turns, runs the
      tools the model calls with the agent's tools and sends their results back, and yields the
      model's events (`RealtimeTextDelta`, `RealtimeToolCall`, `RealtimeToolResult`,
      `RealtimeTurnComplete`) and an `EnqueuedMessagesEvent` per delivered turn. Break out when done.
    - `enqueue(*items, priority='asap')` queues a turn and returns its enqueue id (None for no
      items). `'asap'` is delivered as soon as no response is being generated (one under way
      finishes first); `'when_idle'` only once the model is idle and no `'asap'` turn waits.
      Each delivery is one turn that asks for a response. `await send(...)` delivers at once.
    - A turn takes text (`str`, `TextContent`) and `SystemPromptPart`s. Text is recorded as a
      `UserPromptPart`; system prompts next to text join it as `<system>…</system>` (so the model
      knows that text is not the person speaking); system prompts alone stay `SystemPromptPart`s.
      Anything else is a `UserError` naming the item.
    - The history has the shapes of a run's (requests, responses with usage, tool results; a new
      conversation's first request opens with the agent's system prompts, sent to the model with
      it), so `agent.run(message_history=session.all_messages())` continues or summarizes it.
    - `context_window_used` / `context_tokens` are computed as `RunContext`'s, on this history.
    """

    def __init__(self, state: RunState, connection: RealtimeConnection) -> None:
        self._state = state
        self._connection = connection
        self._start = len(state.history)
        self._asap: list[_Pending] = []
        self._when_idle: list[_Pending] = []
        self._inbox: asyncio.Queue[RealtimeModelEvent | _Wake] = asyncio.Queue()
        self._in_flight = False
        self._closed = False
        state.ctx.queue = self  # `RunContext.enqueue` inside a tool queues here

    # -- what a caller uses -------------------------------------------------------------------
    def enqueue(self, *items: Any, priority: str = 'asap') -> str | None:
        if priority not in ('asap', 'when_idle'):
            raise UserError(f"enqueue priority must be 'asap' or 'when_idle', not {priority!r}")
        if self._closed:
            raise UserError('this realtime session is closed')
        if not items:
            return None
        pending = _Pending(uuid7(), _turn_parts(items))
        (self._asap if priority == 'asap' else self._when_idle).append(pending)
        self._inbox.put_nowait(_WAKE)
        return pending.enqueue_id

    def put(self, items: Sequence[Any], *, priority: str, tool_call_id: str | None) -> str | None:
        """What `RunContext.enqueue` calls inside the session's tools."""
        return self.enqueue(*items, priority=priority)

    async def send(self, *items: Any, respond: bool = True) -> None:
        """Deliver a turn now, even while the model is answering (`respond=False`: context only)."""
        await self._deliver(_turn_parts(items), respond=respond)

    def all_messages(self) -> list[ModelMessage]:
        return list(self._state.history)

    def new_messages(self) -> list[ModelMessage]:
        return list(self._state.history[self._start :])

    @property
    def usage(self) -> RunUsage:
        return self._state.ctx.usage

    @property
    def context_tokens(self) -> int | None:
        return self._state.ctx.context_tokens

    @property
    def context_window_used(self) -> float | None:
        return self._state.ctx.context_window_used

    async def __aiter__(self) -> AsyncIterator[RealtimeModelEvent | EnqueuedMessagesEvent | RealtimeToolResult]:
        pump = asyncio.create_task(self._pump())
        try:
            while not self._closed:
                for delivered in await self._deliver_due():
                    yield delivered
                item = await self._inbox.get()
                if isinstance(item, _Wake):
                    continue
                for event in await self._handle(item):
                    yield event
        finally:
            pump.cancel()

    # -- the loop -----------------------------------------------------------------------------
    async def _pump(self) -> None:
        async for event in self._connection.events():
            self._inbox.put_nowait(event)

    async def _deliver_due(self) -> list[EnqueuedMessagesEvent]:
        if self._in_flight:
            return []
        queue = self._asap or self._when_idle
        if not queue:
            return []
        pending = queue.pop(0)
        request = await self._deliver(pending.parts, respond=True)
        return [EnqueuedMessagesEvent(pending.enqueue_id, (request,))]

    async def _deliver(self, parts: list[ModelRequestPart], *, respond: bool) -> ModelRequest:
        if not self._state.history:
            # A new conversation opens with the agent's system prompts, as a run's first request
            # does: a hand-off (`agent.run(message_history=session.all_messages())`) then keeps them.
            parts = [*await self._state.system_prompt_parts(), *parts]
        request = ModelRequest(parts=parts)
        self._state.append(request)
        self._in_flight = self._in_flight or respond
        await self._connection.send_turn(parts, respond=respond)
        return request

    async def _handle(
        self, event: RealtimeModelEvent
    ) -> list[RealtimeModelEvent | EnqueuedMessagesEvent | RealtimeToolResult]:
        if not isinstance(event, RealtimeTurnComplete):
            return [event]
        state = self._state
        response = event.response
        if response.model_name is None:
            response.model_name = state.model.model_name
        state.append(response)
        state.ctx.usage.requests += 1
        state.ctx.usage.incr(response.usage)
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        if not calls:
            self._in_flight = False
            return [event]
        results = [await self._run_tool(call) for call in calls]
        await self._deliver(list(results), respond=True)
        return [event, *(RealtimeToolResult(r) for r in results)]

    async def _run_tool(self, call: ToolCallPart) -> ToolReturnPart:

        state = self._state
        tool = state.tools.get(call.tool_name)
        if tool is None or (tool.defer_loading and call.tool_name not in revealed(state.history)):
            message = f'Unknown tool name: {call.tool_name!r}'
            return ToolReturnPart(call.tool_name, message, call.tool_call_id, outcome='retried')
        ctx = state.ctx.for_tool(
            tool_name=call.tool_name, tool_call_id=call.tool_call_id, retry=0, max_retries=0, approved=False
        )
        try:
            result = await tool.call(ctx, tool.validate_args(call.args))
        except ToolArgsError as exc:
            return ToolReturnPart(call.tool_name, exc.errors, call.tool_call_id, outcome='retried')
        except ModelRetry as retry:
            return ToolReturnPart(call.tool_name, retry.message, call.tool_call_id, outcome='retried')
        state.ctx.usage.tool_calls += 1
        if isinstance(result, ToolReturn):
            return ToolReturnPart(call.tool_name, result.return_value, call.tool_call_id, metadata=result.metadata)
        return ToolReturnPart(call.tool_name, result, call.tool_call_id)


def _turn_parts(items: Sequence[Any]) -> list[ModelRequestPart]:
    """One turn from enqueued items (see `RealtimeSession`'s rules)."""
    texts: list[str] = []
    systems: list[SystemPromptPart] = []
    for index, item in enumerate(items):
        if isinstance(item, str | TextContent):
            texts.append(item if isinstance(item, str) else item.content)
        elif isinstance(item, SystemPromptPart):
            systems.append(item)
            texts.append(f'<system>{item.content}</system>')
        else:
            raise UserError(
                f'realtime turn item {index} is a {type(item).__name__}: a realtime session takes text (str, '
                'TextContent) and SystemPromptPart'
            )
    if len(systems) == len(texts):  # system prompts alone
        return list(systems)
    return [UserPromptPart('\n'.join(texts))]


def _refuse_deferred_tools(state: RunState) -> None:
    """A realtime connection fixes its tools at connect, so a deferred capability whose load would
    reveal tools cannot keep its promise: refused up front, as pydantic-ai does, naming them."""
    blocked = [cid for cid, cap in state.capabilities.deferred.items() if cap.get_toolset() is not None]
    if blocked:
        names = ', '.join(repr(cid) for cid in blocked)
        raise UserError(
            'Realtime sessions cannot reveal tools mid-session, so deferred capabilities that contribute tools '
            f'are not supported; remove `defer_loading=True` from: {names}.'
        )
