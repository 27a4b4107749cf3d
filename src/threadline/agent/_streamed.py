"""Streaming runs: `StreamedRunResult` (from `Agent.run_stream`) and the event stream of
`Agent.run_stream_events`.

Rules:
- steps before the final response (tool calls and their results) are in `all_messages()` when
  the stream is handed over; the final response joins the history only once the stream finished
  through `stream_text()`, `stream_output()`, `stream_response()` or `get_output()`;
- `stream_text(delta=True)` yields raw deltas; the documents say the final message is then not
  added because the text is never assembled, but Threadline assembles it anyway and adds it (as
  the reference does), so a streamed conversation always stores a complete history;
- a stream is read once: a second read raises `UserError`;
- `cancel()`, breaking out of a read, or an error mid-stream records what arrived as a response
  with `state='interrupted'` (the next run repairs it); leaving without reading leaves it out.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Generic, TypeVar

from threadline.agent._graph import CallToolsNode, End, ModelRequestNode
from threadline.agent._node_stream import model_events, text_of
from threadline.agent._result import AgentRunResult, OutputDataT
from threadline.agent._run import AgentRun
from threadline.exceptions import RunCancelled, UserError
from threadline.messages import (
    AgentRunResultEvent,
    AgentStreamEvent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    PartStartEvent,
    RunUsage,
    TextPart,
    ToolCallPart,
)

__all__ = ['EventStream', 'RunCancelled', 'StreamedRunResult', 'open_stream', 'stream_events']


class StreamedRunResult(Generic[OutputDataT]):
    """A run whose final response is being streamed (see the module docstring for the rules)."""

    def __init__(
        self,
        agent_run: AgentRun[OutputDataT],
        node: ModelRequestNode | None,
        stream_cm: Any,
        streamed: Any,
        iterator: Any,
        buffered: list[Any],
    ) -> None:
        self._run = agent_run
        self._node = node
        self._cm = stream_cm
        self._streamed = streamed
        self._iterator = iterator
        self._buffered = buffered
        self._consumed = False
        self._on_text = False
        """Handed over on its text: that text is the run's output even beside tool calls."""
        self._on_call: str | None = None
        """Handed over on this output call: it decides the run's output (see `ToolStep`)."""
        self.is_complete = False
        """True once read to its end (also for a run that ended without a streamed response, as
        when it waits on deferred tool calls: complete once read, as in the reference)."""

    # -- history and ids ------------------------------------------------------------------------
    def all_messages(self) -> list[ModelMessage]:
        return self._run.all_messages()

    def new_messages(self) -> list[ModelMessage]:
        return self._run.new_messages()

    def all_messages_json(self) -> bytes:
        return ModelMessagesTypeAdapter.dump_json(self.all_messages())

    def new_messages_json(self) -> bytes:
        return ModelMessagesTypeAdapter.dump_json(self.new_messages())

    @property
    def usage(self) -> RunUsage:
        return self._run.usage

    @property
    def run_id(self) -> str:
        return self._run.run_id

    @property
    def conversation_id(self) -> str:
        return self._run.conversation_id

    @property
    def result(self) -> AgentRunResult[OutputDataT] | None:
        """The run's result once the stream completed."""
        return self._run.result

    # -- reading ----------------------------------------------------------------------------------
    async def _events(self) -> AsyncIterator[Any]:
        if self._consumed:
            if self.is_complete:
                return  # read to its end already: get_output() after stream_output() has the result
            raise UserError('this stream is being read; a StreamedRunResult is read by one reader at a time')
        self._consumed = True
        if self._node is None:
            self.is_complete = True
            return
        for event in self._buffered:
            yield event
        while True:
            try:
                event = await self._iterator.__anext__()
            except StopAsyncIteration:
                break
            yield event
        await self._complete()

    async def stream_text(self, *, delta: bool = False, debounce_by: float | None = None) -> AsyncIterator[str]:
        """The text as it grows (`delta=False`), or each new piece (`delta=True`). With
        `debounce_by` (seconds), pieces arriving within that time are yielded together."""
        if self._node is None and not self._consumed:
            output = self._run.result.output if self._run.result is not None else None
            if not isinstance(output, str):
                raise UserError('stream_text() can only be used with text responses')
            async for _ in self._events():
                pass
            yield output
            return
        text = pending = ''
        last = time.monotonic()
        async for event in self._events():
            piece = text_of(event)
            if not piece:
                continue
            text += piece
            pending += piece
            if debounce_by is None or time.monotonic() - last >= debounce_by:
                yield pending if delta else text
                pending, last = '', time.monotonic()
        if pending:
            yield pending if delta else text

    async def stream_output(self) -> AsyncIterator[Any]:
        """The output as it grows (text output), then the validated final output."""
        text = ''
        async for event in self._events():
            piece = text_of(event)
            if piece:
                text += piece
                yield text
        result = self._run.result
        if result is not None:
            yield result.output

    async def stream_response(self) -> AsyncIterator[ModelResponse]:
        """Snapshots of the response (`state='incomplete'`), then the final one."""
        async for _ in self._events():
            yield self._streamed.get() if not self.is_complete else self._final_response()
        yield self._final_response()

    async def get_output(self) -> OutputDataT:
        """Read the whole stream and return the validated output."""
        async for _ in self._events():
            pass
        result = self._run.result
        assert result is not None
        return result.output

    async def cancel(self) -> None:
        """Stop here: record what arrived as an interrupted response."""
        await self._close(interrupted=True)

    def _final_response(self) -> ModelResponse:
        for message in reversed(self.all_messages()):
            if isinstance(message, ModelResponse):
                return message
        return self._streamed.get()  # type: ignore[no-any-return]

    async def _complete(self) -> None:
        """The model's stream ended: record the response and drive the run to its end."""
        node = self._node
        assert node is not None
        self._node = None
        await self._cm.__aexit__(None, None, None)
        run = self._run
        if isinstance(node.result, CallToolsNode):
            node.result.streamed_text, node.result.streamed_call = self._on_text, self._on_call
        current = await run.advance(node, node.result)
        while not isinstance(current, End):
            current = await run.next(current)
        self.is_complete = True

    async def _close(self, *, interrupted: bool) -> None:
        """Leave the stream: unread → left out of the history; partly read → interrupted."""
        node = self._node
        if node is None:
            return
        self._node = None
        if self._consumed or interrupted:
            node.interrupt()
        else:
            node.abandon()
        await self._cm.__aexit__(None, None, None)
        self.is_complete = True
        if node._outcome == 'interrupted':
            await self._run._state_cancelled(RunCancelled('the stream was cancelled'))


async def open_stream(agent_run: AgentRun[Any]) -> StreamedRunResult[Any]:
    """Drive `agent_run` until the model starts streaming its final response, and hand that over."""

    state = agent_run._state
    node = agent_run.next_node
    output_tools = {t.name for t in state.output.output_tools}
    while True:
        if isinstance(node, End):
            return StreamedRunResult(agent_run, None, None, None, None, [])
        if not isinstance(node, ModelRequestNode):
            node = await agent_run.next(node)
            continue
        try:
            if state.capabilities.has('before_node_run'):  # the node streams, so no wrap_node_run
                changed = await state.capabilities.before_node_run(state.ctx, node)
                if not isinstance(changed, ModelRequestNode):  # a hook swapped the node: run that
                    node = changed
                    continue
                node = changed
            cm = node.stream(state)
            streamed = await cm.__aenter__()
        except Exception as error:  # noqa: BLE001 - on_run_error hooks may recover
            node = await agent_run._failed(error)
            continue
        iterator = streamed.__aiter__()
        buffered: list[Any] = []
        saw_call = False
        failed: Exception | None = None
        while True:
            try:
                event = await iterator.__anext__()
            except StopAsyncIteration:
                break
            except Exception as error:  # noqa: BLE001 - on_run_error hooks may recover
                failed = error
                break
            buffered.append(event)
            if isinstance(event, PartStartEvent):
                part = event.part
                if isinstance(part, TextPart) and state.output.allow_text and not saw_call:
                    result = StreamedRunResult(agent_run, node, cm, streamed, iterator, buffered)
                    result._on_text = True
                    return result
                if isinstance(part, ToolCallPart):
                    if part.tool_name in output_tools:
                        result = StreamedRunResult(agent_run, node, cm, streamed, iterator, buffered)
                        result._on_call = part.tool_call_id
                        return result
                    saw_call = True
        if failed is not None:
            await _left(cm, failed)
            node = await agent_run._failed(failed)
            continue
        await cm.__aexit__(None, None, None)
        node = await agent_run.advance(node, node.result)


async def _left(cm: Any, error: Exception) -> None:
    """The model's stream failed before the final response began: leave it with the error."""
    with contextlib.suppress(Exception):  # the stream's own error is the one the run hears
        await cm.__aexit__(type(error), error, error.__traceback__)


async def stream_events(agent_run: AgentRun[Any]) -> AsyncIterator[AgentStreamEvent | AgentRunResultEvent]:
    """Every event of `agent_run`, node by node (see `Agent.run_stream_events`)."""
    state = agent_run._state
    pending: list[Any] = []
    state.events = pending
    node = agent_run.next_node
    while not isinstance(node, End):
        if not isinstance(node, ModelRequestNode):
            node = await agent_run.next(node)
            for event in pending:
                yield event
            pending.clear()
            continue
        finished = False
        async with node.stream(state) as streamed:
            try:
                for event in pending:
                    yield event
                pending.clear()
                async for event in model_events(state, streamed):
                    yield event
                finished = True
            finally:
                if not finished:
                    node.interrupt()
        if not finished:
            await agent_run._state_cancelled(RunCancelled('the event stream was closed'))
            return
        node = await agent_run.advance(node, node.result)
        for event in pending:
            yield event
        pending.clear()
    yield AgentRunResultEvent(agent_run.result)


E = TypeVar('E')


class EventStream(Generic[E]):
    """A run's events: an async iterator that is also an async context manager, so both
    `async for e in agent.run_stream_events(...)` and `async with ... as events:` work; leaving the
    `async with` block (or calling `aclose`) closes the run, whatever was not read."""

    def __init__(self, events: AsyncGenerator[E]) -> None:
        self._events = events
        self._entered = False

    def __aiter__(self) -> EventStream[E]:
        return self

    async def __anext__(self) -> E:
        return await self._events.__anext__()

    async def __aenter__(self) -> EventStream[E]:
        if self._entered:  # one run, one stream: pydantic-ai refuses it the same way
            raise RuntimeError('`run_stream_events()` context manager cannot be entered more than once')
        self._entered = True
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._events.aclose()

    async def aclose(self) -> None:
        await self._events.aclose()
