"""Streaming runs: `StreamedRunResult`, from `Agent.run_stream` (`_run_events` has the event
stream of `Agent.run_stream_events`).

Rules:
- steps before the final response (tool calls and their results) are in `all_messages()` when
  the stream is handed over; the final response joins the history only once the stream finished
  through `stream_text()`, `stream_output()`, `stream_response()` or `get_output()`;
- `stream_text(delta=True)` yields raw deltas; the documents say the final message is then not
  added because the text is never assembled, but Threadline assembles it anyway and adds it (as
  the reference does), so a streamed conversation always stores a complete history;
- a stream is read once: a second read raises `UserError`;
- `debounce_by` (0.1 s by default, as in the reference) coalesces what arrives close together
  (`_debounce`); `stream_output()` yields partial values (`ctx.partial_output`), then the final;
- `cancel()`, breaking out of a read, or an error mid-stream records what arrived as a response
  with `state='interrupted'` (the next run repairs it); leaving without reading leaves it out.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any, Generic, TypeVar

from threadline.agent._debounce import Debounced
from threadline.agent._graph import CallToolsNode, End, ModelRequestNode
from threadline.agent._node_stream import text_of
from threadline.agent._result import AgentRunResult, OutputDataT
from threadline.agent._run import AgentRun
from threadline.agent.output._validators import output_call_context, validate_output
from threadline.agent.tools._tool import ToolArgsError
from threadline.exceptions import ModelRetry, RunCancelled, UserError
from threadline.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    ModelResponsePart,
    PartStartEvent,
    RunUsage,
    TextPart,
    ToolCallPart,
)

__all__ = ['RunCancelled', 'StreamedRunResult', 'open_stream']

T = TypeVar('T')
_NOT_YET = object()
"""A partial output that does not validate yet (`stream_output()` skips it)."""


def _has_content(part: ModelResponsePart) -> bool:
    """The part's own `has_content()`; a part without one (a native tool return) counts."""
    has_content = getattr(part, 'has_content', None)
    return bool(has_content()) if has_content is not None else True


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
        self._stop_reading: Callable[[], Awaitable[None]] | None = None
        """Stops a read of the model in flight (a `Debounced` group being gathered)."""
        self._stream_error: Exception | None = None
        self._cancelled = False
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
    def _begin(self) -> bool:
        """Start the one read of this stream; False when there is nothing left to stream."""
        if self._consumed:
            if self.is_complete:
                return False  # read to its end already: get_output() after stream_output() has the result
            raise UserError('this stream is being read; a StreamedRunResult is read by one reader at a time')
        self._consumed = True
        if self._node is None:
            self.is_complete = True
            return False
        return True

    async def _model_events(self, *, buffered: bool = True) -> AsyncIterator[Any]:
        """The response's events: those that arrived before the hand-over (`buffered`), then the rest."""
        if buffered:
            for event in self._buffered:
                yield event
        while self._node is not None:  # None once cancel() left the stream
            try:
                event = await self._iterator.__anext__()
            except StopAsyncIteration:
                return
            except Exception as error:  # noqa: BLE001 - settled in the reader's task (`_grouped`)
                self._stream_error = error
                return
            yield event

    async def _grouped(self, source: AsyncIterator[T], debounce_by: float | None) -> AsyncIterator[list[T]]:
        """`source` coalesced by time (see `_debounce`); then the run goes on to its end, here in
        the reader's task so the context variables its hooks set stay the run's."""
        debounced = Debounced(source, debounce_by)
        self._stop_reading = debounced.aclose
        try:
            async for group in debounced:
                yield group
        finally:
            await debounced.aclose()
        if self._stream_error is not None:
            await self._stream_failed(self._stream_error)
        elif self._node is not None:  # not left by cancel() mid-read
            await self._complete()

    async def _stream_failed(self, error: Exception) -> None:
        """The model's stream raised mid-read: what arrived is kept as interrupted, and the run's
        `on_run_error` hooks, chained, hear the error. The error the last raises reaches the
        reader; a hook that returns a result ends the run with it, and the stream ends there."""
        node = self._node
        assert node is not None
        self._node = None
        node.interrupt(failed=True)
        await self._cm.__aexit__(None, None, None)
        self.is_complete = True
        await self._run._failed(error)

    async def _events(self) -> AsyncIterator[Any]:
        if self._begin():
            async for group in self._grouped(self._model_events(), None):
                yield group[0]

    async def _texts(self) -> AsyncIterator[str]:
        """The response's text pieces, read as each event arrives (a started part grows in place)."""
        async for event in self._model_events():
            piece = text_of(event)
            if piece:
                yield piece

    async def stream_text(self, *, delta: bool = False, debounce_by: float | None = 0.1) -> AsyncIterator[str]:
        """The text as it grows (`delta=False`), or each new piece (`delta=True`). Pieces arriving
        within `debounce_by` seconds of the first of them are yielded together (None: each
        piece). The growing text passes through the output validators with `ctx.partial_output`."""
        if self._node is None and not self._consumed:
            output = self._run.result.output if self._run.result is not None else None
            if not isinstance(output, str):
                raise UserError('stream_text() can only be used with text responses')
            self._begin()
            yield output
            return
        if not self._begin():
            return
        text = ''
        async for pieces in self._grouped(self._texts(), debounce_by):
            piece = ''.join(pieces)
            text += piece
            yield piece if delta else await self._validated_text(text)

    async def _validated_text(self, text: str) -> str:
        return await validate_output(self._run._state, text, partial=True)  # type: ignore[no-any-return]

    async def stream_output(self, *, debounce_by: float | None = 0.1) -> AsyncIterator[Any]:
        """The output as it grows, validated as a partial value (`ctx.partial_output` is True for
        output functions, hooks and validators; a snapshot that does not validate yet is skipped),
        then always the final output, validated in full."""
        last: list[ModelResponsePart] | None = None
        async for response in self._snapshots(debounce_by):
            if self.is_complete or response.parts == last:
                continue
            last = response.parts
            value = await self._partial_output(response)
            if value is not _NOT_YET:
                yield value
        result = self._run.result
        if result is not None:
            yield result.output

    async def stream_response(self, *, debounce_by: float | None = 0.1) -> AsyncIterator[ModelResponse]:
        """Snapshots of the response (`state='incomplete'`): what arrived before this call (if
        anything), one per `debounce_by` group, then the final response."""
        async for response in self._snapshots(debounce_by):
            yield response
        yield self._final_response()

    async def _snapshots(self, debounce_by: float | None) -> AsyncIterator[ModelResponse]:
        if not self._begin():
            return
        streamed = self._streamed
        if any(_has_content(part) for part in streamed.parts.parts):
            yield streamed.snapshot()
        async for _ in self._grouped(self._model_events(buffered=False), debounce_by):
            yield streamed.snapshot()

    async def _partial_output(self, response: ModelResponse) -> object:
        """The output `response` holds so far, or `_NOT_YET` when it does not validate yet."""
        import pydantic

        state = self._run._state
        try:
            if self._on_call is not None:
                call = next(
                    p for p in response.parts if isinstance(p, ToolCallPart) and p.tool_call_id == self._on_call
                )
                ctx = output_call_context(state, call, partial=True)
                value = await state.output.from_call(ctx, state.capabilities, call)
                return await validate_output(state, value, ctx)
            text = ''.join(p.content for p in response.parts if isinstance(p, TextPart))
            value = await state.output.from_text(replace(state.ctx, partial_output=True), state.capabilities, text)
            return await validate_output(state, value, partial=True)
        except (ToolArgsError, ModelRetry, pydantic.ValidationError, StopIteration):
            return _NOT_YET

    async def get_output(self) -> OutputDataT:
        """Read the whole stream and return the validated output."""
        async for _ in self._events():
            pass
        result = self._run.result
        if result is None:
            raise RunCancelled(
                'this stream was cancelled before the run ended, so it has no output; '
                'all_messages() holds what arrived, marked interrupted'
            )
        return result.output

    async def cancel(self) -> None:
        """Stop here: record what arrived as an interrupted response; a read in progress ends."""
        self._cancelled = True
        await self._close(interrupted=True)

    @property
    def cancelled(self) -> bool:
        """Whether `cancel()` stopped this stream."""
        return self._cancelled

    @property
    def response(self) -> ModelResponse:
        """The streamed response: what has arrived so far (`state='incomplete'`) while it streams,
        then as the history records it (`'complete'`, or `'interrupted'` after `cancel()`)."""
        if self._node is not None:
            return self._streamed.snapshot()  # type: ignore[no-any-return]
        return self._final_response()

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

    async def _heard(self, error: Exception) -> None:
        """The `on_run_error` hooks, chained, hear `error`: the error the last of them raises is the
        one the reader's block raises; one that returns a result cannot undo the block's error."""
        try:
            await self._run._recover(error)
        except Exception as chained:
            if chained is not error:
                raise chained from error

    async def _close(self, *, interrupted: bool, error: BaseException | None = None) -> None:
        """Leave the stream: unread → left out of the history; partly read → interrupted. Left on
        an `error` (the model's stream or the reader's block raised): the `on_run_error` hooks
        hear that error, as in the reference, and no `after_model_request` hook runs."""
        node = self._node
        if node is None:
            return
        self._node = None
        if self._stop_reading is not None:  # a reader left mid-group: stop its read of the model first
            await self._stop_reading()
        failed = isinstance(error, Exception)
        if self._consumed or interrupted:
            node.interrupt(failed=failed)
        else:
            node.abandon()
        await self._cm.__aexit__(None, None, None)
        self.is_complete = True
        if isinstance(error, Exception):
            await self._heard(error)
        elif node._outcome == 'interrupted':
            await self._run._state_cancelled(RunCancelled('the stream was cancelled'))


async def open_stream(agent_run: AgentRun[Any]) -> StreamedRunResult[Any]:
    """Drive `agent_run` until the model starts streaming its final response, and hand that over."""

    state = agent_run._state
    node = agent_run.next_node
    output_tools = {t.name for t in state.step_output_tools}
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
