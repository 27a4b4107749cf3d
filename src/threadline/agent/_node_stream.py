"""`node.stream(agent_run.ctx)`: a node of a run driven by `iter()`, streamed by its caller.

    async with agent.iter('...') as run:
        async for node in run:
            if Agent.is_model_request_node(node) or Agent.is_call_tools_node(node):
                async with node.stream(run.ctx) as events:
                    async for event in events:
                        ...

Rules (pydantic-ai 2.62's):
- A model request node yields its response's events as they arrive, with a `FinalResultEvent`
  after the first part that can be the output; a tool node yields its calls' and results' events.
- A node streamed this way has run: the run's next step goes on from it without running it again.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING

from threadline.agent._state import RunState
from threadline.exceptions import UserError
from threadline.messages import (
    AgentStreamEvent,
    FinalResultEvent,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    RequestUsage,
    TextPart,
    TextPartDelta,
    ToolCallPart,
)
from threadline.models import StreamedResponse

if TYPE_CHECKING:
    from threadline.agent._graph import CallToolsNode, ModelRequestNode

__all__ = ['RequestStream', 'consumer_view', 'model_events', 'stream_request_node', 'stream_tools_node', 'text_of']


async def model_events(state: RunState, streamed: StreamedResponse) -> AsyncGenerator[AgentStreamEvent]:
    """A model response's stream events, with a `FinalResultEvent` after the first part that can
    be the output (text when text is allowed, or a call to an output tool)."""

    output_tools = {t.name for t in state.step_output_tools}
    final_sent = False
    async for event in streamed:
        yield event
        if not final_sent and isinstance(event, PartStartEvent):
            part = event.part
            if isinstance(part, ToolCallPart) and part.tool_name in output_tools:
                final_sent = True
                yield FinalResultEvent(part.tool_name, part.tool_call_id)
            elif isinstance(part, TextPart) and state.output.allow_text:
                final_sent = True
                yield FinalResultEvent(None, None)


def consumer_view(state: RunState, stream: AsyncGenerator[AgentStreamEvent]) -> AsyncGenerator[AgentStreamEvent]:
    """`stream` as a consumer reads it: heard by the capabilities' `on_event` hooks and through
    their `wrap_run_event_stream` wrappers, when any capability has them."""
    chain = state.capabilities
    return chain.event_stream(state.ctx, stream) if chain.hears_events() else stream


def text_of(event: AgentStreamEvent) -> str | None:
    """The text an event adds (a text part starting, or a text delta); None for any other."""
    if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
        return event.part.content
    if isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
        return event.delta.content_delta
    return None


class RequestStream:
    """A model request node's response as it streams: iterate it for the events; `get()` is the
    response so far; `stream_text()` its text."""

    def __init__(self, state: RunState, streamed: StreamedResponse) -> None:
        self._state, self._streamed = state, streamed

    def __aiter__(self) -> AsyncIterator[AgentStreamEvent]:
        return consumer_view(self._state, model_events(self._state, self._streamed))

    def get(self) -> ModelResponse:
        return self._streamed.get()

    def usage(self) -> RequestUsage:
        return self._streamed.usage

    async def stream_text(self, *, delta: bool = False) -> AsyncIterator[str]:
        """The text as it grows, or (`delta=True`) each new piece."""
        text = ''
        async for event in self:
            piece = text_of(event)
            if piece:
                text += piece
                yield piece if delta else text


def _state_of(ctx: object) -> RunState:
    state = getattr(ctx, '_state', None)  # `agent_run.ctx` (a RunGraphContext) holds the run's state
    if not isinstance(state, RunState):
        raise UserError('node.stream() takes the context of the run the node came from: node.stream(agent_run.ctx)')
    return state


@contextlib.asynccontextmanager
async def stream_request_node(node: ModelRequestNode, ctx: object) -> AsyncIterator[RequestStream]:
    state = _state_of(ctx)
    async with node.stream(state) as streamed:
        yield RequestStream(state, streamed)


@contextlib.asynccontextmanager
async def stream_tools_node(node: CallToolsNode, ctx: object) -> AsyncIterator[AsyncIterator[AgentStreamEvent]]:
    """Run the node's calls, then yield the events they made, in order."""
    state = _state_of(ctx)
    earlier = state.events
    events: list[AgentStreamEvent] = []
    state.events = events
    try:
        node.streamed_next = await node.run(state)
    finally:
        state.events = earlier
    yield consumer_view(state, _replay(events))


async def _replay(events: list[AgentStreamEvent]) -> AsyncGenerator[AgentStreamEvent]:
    for event in events:
        yield event
