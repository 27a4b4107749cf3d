"""`run_stream_sync`: `run_stream` for code without an event loop.

The whole `async with agent.run_stream(...)` block runs as one task on the thread's event loop,
so context managers and context variables entered inside it are left in the task that entered
them. The synchronous side sends it requests (the next chunk, the output, the end) and waits on
the loop for each answer.

Rules:
- Use it as a `with` block on the thread that made it; leaving the block ends the run as leaving
  `run_stream`'s block does (an unfinished stream is recorded as interrupted), and an error in
  the block is raised inside `run_stream`'s block too.
- Or read it without `with`: the first read starts the run, and the run ends (as the block would
  end) once the stream has been read to its end, or when a read fails.
- It cannot run inside a running event loop (use `run_stream` there): a clear `UserError` when
  it is made.
- An error inside the run is raised from the call that was waiting for it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from threadline.exceptions import UserError
from threadline.messages import ModelMessage, ModelResponse, RunUsage

if TYPE_CHECKING:
    from threadline.agent._result import AgentRunResult
    from threadline.agent._streamed import StreamedRunResult

__all__ = ['StreamedRunResultSync']

OutputT = TypeVar('OutputT')
T = TypeVar('T')


class _End:
    """The type of `_END`: what an iteration step answers once the stream is done."""


_END = _End()


_Request = tuple[Callable[['StreamedRunResult[Any]'], Awaitable[Any]], 'asyncio.Future[Any]']
"""Work to run inside the `run_stream` block, and the future its answer goes to."""


@dataclass
class _Raise:
    """A request to raise `error` inside the `run_stream` block (the caller's block failed)."""

    error: BaseException


def _refuse_a_running_loop() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise UserError('run_stream_sync() cannot be called from a running event loop; use `agent.run_stream(...)`.')


class StreamedRunResultSync(Generic[OutputT]):
    """A streamed run driven from synchronous code; the same methods as `StreamedRunResult`."""

    def __init__(
        self, opening: AbstractAsyncContextManager[StreamedRunResult[OutputT]], loop: asyncio.AbstractEventLoop
    ) -> None:
        _refuse_a_running_loop()
        self._opening, self._loop = opening, loop
        # Each request's answer is of its own type; `_ask` hands it back typed.
        self._requests: asyncio.Queue[_Request | _Raise | None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._streamed: StreamedRunResult[OutputT] | None = None
        self._in_with = False

    def __enter__(self) -> StreamedRunResultSync[OutputT]:
        _refuse_a_running_loop()
        self._in_with = True
        self._start()
        return self

    def _start(self) -> None:
        if self._task is not None:
            return
        opened: asyncio.Future[StreamedRunResult[OutputT]] = self._loop.create_future()
        self._requests = asyncio.Queue()
        self._task = self._loop.create_task(self._serve(opened))
        self._streamed = self._loop.run_until_complete(opened)

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self._end(exc)

    def _end(self, exc: BaseException | None) -> None:
        assert self._requests is not None and self._task is not None
        if self._task.done():
            return
        if exc is None:
            self._requests.put_nowait(None)
            self._loop.run_until_complete(self._task)
            return
        self._requests.put_nowait(_Raise(exc))  # into `run_stream`'s block: the stream is interrupted
        with contextlib.suppress(BaseException):  # the block's own error is the one to raise
            self._loop.run_until_complete(self._task)

    async def _serve(self, opened: asyncio.Future[StreamedRunResult[OutputT]]) -> None:
        """The task that holds the `run_stream` block: it runs each request the caller sends."""
        assert self._requests is not None
        try:
            async with self._opening as streamed:
                opened.set_result(streamed)
                while (request := await self._requests.get()) is not None:
                    if isinstance(request, _Raise):
                        raise request.error
                    work, answer = request
                    try:
                        answer.set_result(await work(streamed))
                    except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                        answer.set_exception(exc)
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc)
            else:
                raise

    def _ask(self, work: Callable[[StreamedRunResult[OutputT]], Awaitable[T]]) -> T:
        self._start()
        assert self._requests is not None and self._task is not None
        if self._task.done():
            raise UserError('this streamed run has ended: read what it produced with get_output() or all_messages()')
        answer: asyncio.Future[T] = self._loop.create_future()
        self._requests.put_nowait((work, answer))
        try:
            value = self._loop.run_until_complete(answer)
        except BaseException as exc:
            if not self._in_with:
                self._end(exc)
            raise
        if not self._in_with and self._live.is_complete:
            self._end(None)  # read to its end: the run ends as the block would
        return value

    def _iterate(self, make: Callable[[StreamedRunResult[OutputT]], AsyncIterator[T]]) -> Iterator[T]:
        holder: list[AsyncIterator[T]] = []

        async def step(streamed: StreamedRunResult[OutputT]) -> T | _End:
            if not holder:
                holder.append(make(streamed))
            try:
                return await anext(holder[0])
            except StopAsyncIteration:
                return _END

        while not isinstance(item := self._ask(step), _End):
            yield item

    @property
    def _live(self) -> StreamedRunResult[OutputT]:
        self._start()
        assert self._streamed is not None
        return self._streamed

    def stream_text(self, *, delta: bool = False, debounce_by: float | None = 0.1) -> Iterator[str]:
        return self._iterate(lambda s: s.stream_text(delta=delta, debounce_by=debounce_by))

    def stream_output(self, *, debounce_by: float | None = 0.1) -> Iterator[Any]:
        return self._iterate(lambda s: s.stream_output(debounce_by=debounce_by))

    def stream_response(self, *, debounce_by: float | None = 0.1) -> Iterator[ModelResponse]:
        return self._iterate(lambda s: s.stream_response(debounce_by=debounce_by))

    def get_output(self) -> OutputT:
        if self._task is not None and self._task.done() and self._live.result is not None:
            return self._live.result.output  # the run has ended (read without `with`)
        return self._ask(lambda s: s.get_output())

    @property
    def is_complete(self) -> bool:
        return self._live.is_complete

    @property
    def cancelled(self) -> bool:
        return self._live.cancelled

    @property
    def response(self) -> ModelResponse:
        return self._live.response

    def cancel(self) -> None:
        self._ask(lambda s: s.cancel())

    def all_messages(self) -> list[ModelMessage]:
        return self._live.all_messages()

    def new_messages(self) -> list[ModelMessage]:
        return self._live.new_messages()

    def all_messages_json(self) -> bytes:
        return self._live.all_messages_json()

    def new_messages_json(self) -> bytes:
        return self._live.new_messages_json()

    @property
    def usage(self) -> RunUsage:
        return self._live.usage

    @property
    def run_id(self) -> str:
        return self._live.run_id

    @property
    def conversation_id(self) -> str:
        return self._live.conversation_id

    @property
    def result(self) -> AgentRunResult[OutputT] | None:
        return self._live.result
