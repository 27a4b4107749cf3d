"""One turn of a conversation at a time, in the order the turns arrived, across every server
process that shares the store.

Rules (each tested):
- Every turn, on any store, waits in the store's line for the conversation's turn lease
  (`claim_turn`, see `TurnLeases`): the line is kept by the store, so turns arriving at different
  servers run in the order they arrived, as turns arriving at one server do.
- A turn that is not admitted within `wait` seconds is refused before anything streams
  (`TurnBusy`, a 409), and leaves the line: the client may send it again.
- A waiting turn asks again at least every half second (well inside the store's `patience`), and
  at once when a turn on this server ends. A server that dies while its turns wait loses their
  places after the store's `patience`.
- An admitted turn holds the lease while it runs, renewed every third of its `ttl`, and gives it
  back when the response ends, however it ends (finished, failed, client gone). A server that dies
  holding one is outwaited by the `ttl`.
- The lease is a courtesy to the store's revisions, not a replacement: the save still names the
  revision the turn started from, so a turn whose lease lapsed (a stalled renewal, clock skew)
  can never overwrite or interleave another's.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TypeVar

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from threadline.exceptions import TurnBusy
from threadline.storage import AsyncStore, SyncStore

__all__ = ['TurnBusy', 'TurnGate', 'TurnResponse', 'closing_events', 'turn_response']

T = TypeVar('T')

logger = logging.getLogger('threadline.server')

_LONGEST_PAUSE = 0.5  # seconds between a waiting turn's claims, at most


class TurnGate:
    """Admits one turn per conversation at a time, first come first (see the module docstring)."""

    def __init__(self, store: AsyncStore[SyncStore], *, ttl: float = 60.0, wait: float = 15.0) -> None:
        self.store, self.ttl, self.wait = store, ttl, wait
        self.server = f'{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}'
        self._numbers = itertools.count(1)
        # Set when a turn here ends, so turns waiting here ask at once; dropped when none waits.
        self._ended: weakref.WeakValueDictionary[tuple[str, str], asyncio.Event] = weakref.WeakValueDictionary()

    async def enter(self, scope: str, cid: str) -> Callable[[], Awaitable[None]]:
        """Wait for the conversation's turn; returns the coroutine function that ends it."""
        holder = self.holder()
        await self.admit(scope, cid, holder)
        renewal = asyncio.create_task(self._renew(scope, cid, holder))

        async def leave() -> None:
            await self._leave(scope, cid, holder, renewal)

        return leave

    async def admit(self, scope: str, cid: str, holder: str) -> None:
        """Wait in line until `holder` holds the turn (a `TurnBusy` after `wait` seconds, having
        left the line); the caller then renews and releases it (`enter`, `hold`)."""
        try:
            await self._claim(scope, cid, holder, self.wait)
        except BaseException:
            await self.store.release_turn(cid, scope=scope, holder=holder)  # leave the line
            raise

    @contextlib.asynccontextmanager
    async def hold(self, scope: str, cid: str, holder: str) -> AsyncIterator[None]:
        """Hold the turn as `holder` for the block: a durable turn's workflow, admitted when its
        request was (so claiming again renews), or claiming it again after a crash (in line, with
        no deadline: the turn was admitted once)."""
        await self._claim(scope, cid, holder, None)
        renewal = asyncio.create_task(self._renew(scope, cid, holder))
        try:
            yield
        finally:
            await self._leave(scope, cid, holder, renewal)

    def holder(self) -> str:
        """A new place in a line: each turn has its own."""
        return f'{self.server}:{next(self._numbers)}'

    async def _leave(self, scope: str, cid: str, holder: str, renewal: asyncio.Task[None]) -> None:
        renewal.cancel()
        try:
            await self.store.release_turn(cid, scope=scope, holder=holder)
        finally:
            ended = self._ended.pop((scope, cid), None)
            if ended is not None:
                ended.set()

    async def _claim(self, scope: str, cid: str, holder: str, wait: float | None) -> None:
        deadline = None if wait is None else time.monotonic() + wait
        pause = 0.02
        while not await self.store.claim_turn(cid, scope=scope, holder=holder, ttl=self.ttl):
            remaining = _LONGEST_PAUSE if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                raise TurnBusy(
                    f'conversation {cid!r} is answering another turn that did not finish within {self.wait:g} s: '
                    'send this turn again when it has'
                )
            ended = self._ended.get((scope, cid))
            if ended is None:
                ended = self._ended[(scope, cid)] = asyncio.Event()
            with contextlib.suppress(TimeoutError):  # woken early, or time to ask again
                await asyncio.wait_for(ended.wait(), timeout=min(pause, remaining))
            pause = min(pause * 2, _LONGEST_PAUSE)

    async def _renew(self, scope: str, cid: str, holder: str) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            if not await self.store.claim_turn(cid, scope=scope, holder=holder, ttl=self.ttl):
                # The save's revision check still guards the history; say so without content.
                logger.warning(
                    'turn lease of a conversation lapsed before its turn ended; its save checks the revision'
                )
                return


class TurnResponse(StreamingResponse):
    """A streaming response that calls `leave` when it ends, however it ends (even when the client
    is gone before the body starts, where a generator's `finally` would never run)."""

    def __init__(
        self, body: AsyncIterator[str], leave: Callable[[], Awaitable[None]], headers: Mapping[str, str]
    ) -> None:
        super().__init__(body, headers=dict(headers))
        self.leave = leave

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.leave()


def turn_response(
    body: AsyncIterator[str], leave: Callable[[], Awaitable[None]], headers: Mapping[str, str]
) -> TurnResponse:
    """The response of one turn: `body` streamed, then `leave` (see `TurnResponse`)."""
    return TurnResponse(body, leave, headers)


async def closing_events(events: AsyncIterator[T]) -> AsyncIterator[T]:
    """`events`, closed when the reading stops: a client that leaves mid-turn stops the run too
    (`run_stream_events()` runs in a background task until it is read to its end or closed)."""
    try:
        async for event in events:
            yield event
    finally:
        close = getattr(events, 'aclose', None)
        if close is not None:
            await close()
