"""One turn of a conversation at a time, across every server process that shares the store.

Rules (each tested):
- Turns of one conversation on this server queue on an asyncio lock, in arrival order. A turn
  that is not admitted within `wait` seconds, counting the wait here and for the lease below, is
  refused before anything streams (`TurnBusy`, a 409).
- Across servers (any store but an in-process `MemoryStore`), a turn holds the store's turn lease (`claim_turn`) while it runs, renewed every
  third of its `ttl`. A turn that cannot get the lease within `wait` seconds is refused before
  anything streams (`TurnBusy`, a 409): the client may send it again.
- The lease is given back when the response ends, however it ends (finished, failed, client
  gone). A server that dies holding one is outwaited by the `ttl`.
- The lease is a courtesy to the store's revisions, not a replacement: the save still names the
  revision the turn started from, so a turn whose lease lapsed (a stalled renewal, clock skew)
  can never overwrite or interleave another's.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from threadline.exceptions import TurnBusy
from threadline.storage import AsyncStore, SyncStore

__all__ = ['TurnBusy', 'TurnGate', 'TurnResponse', 'turn_response']

logger = logging.getLogger('threadline.server')


class TurnGate:
    """Admits one turn per conversation at a time (see the module docstring)."""

    def __init__(self, store: AsyncStore[SyncStore], *, ttl: float = 60.0, wait: float = 15.0) -> None:
        self.store, self.ttl, self.wait = store, ttl, wait
        self.holder = f'{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}'
        # Dropped when no turn holds or waits for it.
        self._locks: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = weakref.WeakValueDictionary()

    async def enter(self, scope: str, cid: str) -> Callable[[], Awaitable[None]]:
        """Wait for the conversation's turn; returns the coroutine function that ends it."""
        lock = self._locks.get((scope, cid))
        if lock is None:
            lock = self._locks[(scope, cid)] = asyncio.Lock()
        deadline = time.monotonic() + self.wait
        try:
            await asyncio.wait_for(lock.acquire(), timeout=self.wait)
        except TimeoutError:
            raise TurnBusy(
                f'conversation {cid!r} is answering another turn that did not finish within {self.wait:g} s: '
                'send this turn again when it has'
            ) from None
        if self.store.in_process:  # no other process can reach this store: the lock is enough

            async def unlock() -> None:
                lock.release()

            return unlock
        try:
            await self._claim(scope, cid, deadline)
        except BaseException:
            lock.release()
            raise
        renewal = asyncio.create_task(self._renew(scope, cid))

        async def leave() -> None:
            renewal.cancel()
            try:
                await self.store.release_turn(cid, scope=scope, holder=self.holder)
            finally:
                lock.release()

        return leave

    async def _claim(self, scope: str, cid: str, deadline: float) -> None:
        pause = 0.02
        while not await self.store.claim_turn(cid, scope=scope, holder=self.holder, ttl=self.ttl):
            if time.monotonic() + pause > deadline:
                raise TurnBusy(
                    f'conversation {cid!r} is answering another turn (on another server) that did not '
                    f'finish within {self.wait:g} s: send this turn again when it has'
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.5)

    async def _renew(self, scope: str, cid: str) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            if not await self.store.claim_turn(cid, scope=scope, holder=self.holder, ttl=self.ttl):
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
