"""`Agent.run_stream_events()`: a run's events, produced by `run(event_stream_handler=...)` in a
background task, as pydantic-ai 2.62 produces them.

Rules:
- the run starts on the first read, not on creation or on entering `async with`; it runs in a
  task of its own (a copy of the reader's context variables at that moment), so what its hooks
  set stays the run's;
- the run is never more than one event ahead of the reader: handing an event over waits until
  the reader has taken it;
- the events are those `run(event_stream_handler=...)` hands its handler, then an
  `AgentRunResultEvent` with the result; an error ends the stream with that error, after the
  events that came before it;
- leaving `async with` (or `aclose()`) cancels the run if it is still going and waits for it to
  stop, so a `break` leaves nothing running; iterating without `async with` is allowed, and then
  reading to the end (or `aclose()`) is what stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable, Awaitable, Callable
from typing import Any, Generic, TypeVar

from threadline.agent._context import RunContext
from threadline.messages import AgentRunResultEvent, AgentStreamEvent

__all__ = ['EventStream']

E = TypeVar('E')

_END = object()
"""Put in the channel after the run's last event: the run returned (its result follows) or raised."""


class EventStream(Generic[E]):
    """A run's events (see the module rules): an async iterator that is also an async context
    manager, so both `async for e in agent.run_stream_events(...)` and `async with ... as events:`
    work."""

    def __init__(self, run: Callable[..., Awaitable[Any]]) -> None:
        """`run(event_stream_handler=...)` runs the agent to its end, handing it each step's events."""
        self._run = run
        self._task: asyncio.Task[None] | None = None
        self._channel: asyncio.Queue[Any] = asyncio.Queue(maxsize=1)
        self._entered = False
        self._done = False

    def __aiter__(self) -> EventStream[E]:
        return self

    async def __anext__(self) -> E:
        if self._done:
            raise StopAsyncIteration
        if self._task is None:
            self._task = asyncio.ensure_future(self._produce())
        item = await self._channel.get()
        self._channel.task_done()
        if item is not _END:
            return item  # type: ignore[no-any-return]
        self._done = True
        outcome = await self._channel.get()
        if isinstance(outcome, BaseException):
            raise outcome
        return AgentRunResultEvent(outcome)  # type: ignore[return-value]

    async def _produce(self) -> None:
        async def hand_over(ctx: RunContext[Any], events: AsyncIterable[AgentStreamEvent]) -> None:
            async for event in events:
                await self._channel.put(event)
                await self._channel.join()  # the reader has it: no further ahead than this one

        try:
            outcome: Any = await self._run(event_stream_handler=hand_over)
        except Exception as error:  # noqa: BLE001 - the reader raises it, in order
            outcome = error
        await self._channel.put(_END)
        await self._channel.put(outcome)

    async def __aenter__(self) -> EventStream[E]:
        if self._entered:  # one run, one stream: pydantic-ai refuses it the same way
            raise RuntimeError('`run_stream_events()` context manager cannot be entered more than once')
        self._entered = True
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the run if it is still going (it records itself as cancelled) and wait for it."""
        self._done = True
        task = self._task
        if task is None or task.done():
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
