"""`event_stream_handler=`: a plain `run()` that hands each step's events to your function.

Rules (as in the reference):
- the handler is awaited once per model request, with that response's stream events (a
  `FinalResultEvent` after the first part that can be the output), and once per tool step, with
  its tool call and result events (an empty stream when the step had none to run);
- events delivered between steps (enqueued messages) go to the next call;
- what the handler leaves unread is still read, so the run's history is the same as without one;
- an exception from the handler ends the run with that exception, and the response being streamed
  is recorded as interrupted;
- under a capability with `streams_in_model_request` (`DBOSDurability`), the response streams
  inside the model request, so the `wrap_model_request` hooks enclose the handler's call: a
  durable step then holds the whole stream, and a response a replay takes from its checkpoint
  reaches no handler. An exception from the handler there fails the request instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any, TypeAlias

from threadline.agent._context import RunContext
from threadline.agent._graph import CallToolsNode, End, ModelRequestNode
from threadline.agent._node_stream import consumer_view, model_events
from threadline.agent._run import AgentRun
from threadline.messages import AgentStreamEvent, ModelMessage, ModelResponse
from threadline.models import Model, ModelRequestParameters, ModelSettings, StreamedResponse

if TYPE_CHECKING:
    from threadline.agent._state import RunState

__all__ = ['EventStreamHandler', 'drive_with_handler', 'read_all']

EventStreamHandler: TypeAlias = Callable[[RunContext[Any], AsyncIterable[AgentStreamEvent]], Awaitable[None]]


async def read_all(ctx: RunContext[Any], events: AsyncIterable[AgentStreamEvent]) -> None:
    """The handler of a run with no handler whose capabilities hear its events: it reads them."""
    async for _ in events:
        pass


async def drive_with_handler(agent_run: AgentRun[Any], handler: EventStreamHandler) -> None:
    """Drive `agent_run` to its end, handing each step's events to `handler`."""
    state = agent_run._state
    pending: list[AgentStreamEvent] = []
    state.events = pending
    node = agent_run.next_node
    while not isinstance(node, End):
        if isinstance(node, ModelRequestNode) and state.capabilities.streams_in_request():
            state.stream_in_request = partial(_streamed_request, state, handler, pending)
            try:
                node = await agent_run.next(node)
            finally:
                state.stream_in_request = None
            continue
        if isinstance(node, ModelRequestNode):
            try:
                await _model_step(state, node, handler, pending)
            except Exception as error:  # noqa: BLE001 - the run's on_run_error hooks hear it (and may recover)
                node = await agent_run._failed(error)
                continue
            node = await agent_run.advance(node, node.result)
            continue
        tools_step = isinstance(node, CallToolsNode)
        try:
            node = await agent_run.next(node)
        except Exception:
            if tools_step and pending:  # a tool raised: the handler still hears the calls before it
                events, pending[:] = list(pending), []
                with contextlib.suppress(Exception):  # the tool's error is the one the run raises
                    await handler(state.ctx, consumer_view(state, _replay(events)))
            raise
        if tools_step:
            events, pending[:] = list(pending), []
            await handler(state.ctx, consumer_view(state, _replay(events)))


async def _model_step(
    state: RunState, node: ModelRequestNode, handler: EventStreamHandler, pending: list[AgentStreamEvent]
) -> None:
    async with node.stream(state) as streamed:
        try:
            await _hand_over(state, handler, pending, streamed)
        except BaseException:
            node.interrupt()
            raise


async def _hand_over(
    state: RunState, handler: EventStreamHandler, pending: list[AgentStreamEvent], streamed: StreamedResponse
) -> None:
    """The events waiting, then the response's as they arrive, to `handler`; what it leaves
    unread is still read, so the response is whole."""
    earlier, pending[:] = list(pending), []
    events = consumer_view(state, _chain(earlier, model_events(state, streamed)))
    try:
        await handler(state.ctx, events)
        async for _ in events:
            pass
    finally:
        await events.aclose()


async def _streamed_request(
    state: RunState,
    handler: EventStreamHandler,
    pending: list[AgentStreamEvent],
    model: Model,
    messages: list[ModelMessage],
    settings: ModelSettings | None,
    parameters: ModelRequestParameters,
) -> ModelResponse:
    """One model request sent streamed, its events handed to `handler` as they arrive; returns the
    whole response, as a request that did not stream would."""
    async with model.request_stream(messages, settings, parameters) as streamed:
        if state.limits.has_token_limits():
            streamed.watch = lambda so_far: state.limits.check_tokens(state.ctx.usage + so_far)
        await _hand_over(state, handler, pending, streamed)
    response = streamed.get()
    if response.state == 'incomplete':
        response.state = 'complete'
    return response


async def _chain(first: Iterable[Any], then: AsyncIterator[Any]) -> AsyncGenerator[Any]:
    for event in first:
        yield event
    async for event in then:
        yield event


async def _replay(events: Iterable[Any]) -> AsyncGenerator[Any]:
    for event in events:
        yield event
