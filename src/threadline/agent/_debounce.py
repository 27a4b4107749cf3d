"""Coalescing a stream's items by time (`debounce_by` on `stream_text()` and the rest).

Rules (pydantic-ai 2.62's, probed against it):
- `seconds=None` does not group: each item is a group of one;
- otherwise a group starts with the first item to arrive and is handed on once `seconds` have
  passed since then, holding everything that arrived meanwhile; waiting with nothing yet
  received hands nothing on, and the end of the source hands on what is left;
- the wait for the next item is never cancelled by a timeout (the source is not interrupted
  mid-read); only `aclose()` cancels it, and it waits until the source has stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Generic, TypeVar

__all__ = ['Debounced']

T = TypeVar('T')


class Debounced(Generic[T]):
    """The groups of `source` (see the module rules). Close it (`aclose`) when leaving early, so
    no read of `source` is left running after the caller moved on."""

    def __init__(self, source: AsyncIterator[T], seconds: float | None) -> None:
        if seconds is not None and seconds < 0:
            raise ValueError(f'debounce_by must be None or a number of seconds >= 0, not {seconds!r}')
        self._source = source
        self._seconds = seconds
        self._pending: asyncio.Future[T] | None = None
        self._ended = False

    def __aiter__(self) -> AsyncIterator[list[T]]:
        return self._groups()

    async def _groups(self) -> AsyncIterator[list[T]]:
        if self._seconds is None:
            async for item in self._source:
                yield [item]
            return
        group: list[T] = []
        started: float | None = None
        while not self._ended:
            wait = self._seconds if started is None else self._seconds - (time.monotonic() - started)
            if self._pending is None:
                self._pending = asyncio.ensure_future(self._source.__anext__())
            done, _ = await asyncio.wait((self._pending,), timeout=max(wait, 0))
            if not done:
                if group:
                    yield group
                    group, started = [], None
                continue
            pending, self._pending = self._pending, None
            try:
                group.append(pending.result())
            except StopAsyncIteration:
                self._ended = True
                break
            if started is None:
                started = time.monotonic()
        if group:
            yield group

    async def aclose(self) -> None:
        """Stop reading `source`: a read in flight is cancelled and awaited."""
        pending, self._pending = self._pending, None
        self._ended = True
        if pending is not None and not pending.done():
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pending
