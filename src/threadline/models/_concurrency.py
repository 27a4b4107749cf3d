"""Concurrency limits: how many agent runs (`Agent(max_concurrency=...)`) or model requests
(`limit_model_concurrency`) may be under way at once, as pydantic-ai 2.62 has them.

Rules:
- `max_running` slots (at least 1); past them, callers wait in arrival order. With `max_queued`,
  a caller that would make the queue longer than that fails at once with
  `ConcurrencyLimitExceeded` instead of waiting (backpressure).
- A slot is released when its holder ends, however it ends; a caller cancelled while waiting
  leaves the queue, and a slot handed to it as it was cancelled goes on to the next.
- The limiter belongs to no event loop: one agent may run under several `asyncio.run`s.
- `int` means `ConcurrencyLimit(max_running=int)`; a limiter instance may be shared by several
  agents and models; None means no limit.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TypeAlias

from threadline.exceptions import ConcurrencyLimitExceeded, UserError

__all__ = [
    'AbstractConcurrencyLimiter',
    'AnyConcurrencyLimit',
    'ConcurrencyLimit',
    'ConcurrencyLimiter',
    'holding_slot',
    'normalize_to_limiter',
]


class AbstractConcurrencyLimiter(ABC):
    """A limiter of one's own (one shared across processes, say): `acquire` waits for a slot,
    `release` gives it back (possibly from another task than the one that acquired it)."""

    @abstractmethod
    async def acquire(self, source: str) -> None:
        """Wait for a slot; `source` names who asks (`'agent:support'`, `'model:gpt-5.2'`)."""

    @abstractmethod
    def release(self) -> None:
        """Give a slot back."""


def _check(max_running: int, max_queued: int | None) -> None:
    if isinstance(max_running, bool) or not isinstance(max_running, int) or max_running < 1:
        raise UserError(f'max_running must be an int >= 1, got {max_running!r}. Use None for no concurrency limiting.')
    if max_queued is not None and (isinstance(max_queued, bool) or not isinstance(max_queued, int) or max_queued < 0):
        raise UserError(f'max_queued must be an int >= 0, got {max_queued!r}. Use None for an unlimited queue.')


@dataclass(frozen=True)
class ConcurrencyLimit:
    """`max_running` at once; at most `max_queued` waiting (None: no bound)."""

    max_running: int
    max_queued: int | None = None

    def __post_init__(self) -> None:
        _check(self.max_running, self.max_queued)


class ConcurrencyLimiter(AbstractConcurrencyLimiter):
    """The limiter `ConcurrencyLimit` makes (see the module docstring)."""

    def __init__(self, max_running: int, *, max_queued: int | None = None, name: str | None = None) -> None:
        _check(max_running, max_queued)
        self._max_running, self._max_queued, self._name = max_running, max_queued, name
        self._running = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @classmethod
    def from_limit(cls, limit: int | ConcurrencyLimit, *, name: str | None = None) -> ConcurrencyLimiter:
        if isinstance(limit, ConcurrencyLimit):
            return cls(limit.max_running, max_queued=limit.max_queued, name=name)
        return cls(limit, name=name)

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def max_running(self) -> int:
        return self._max_running

    @property
    def running_count(self) -> int:
        return self._running

    @property
    def waiting_count(self) -> int:
        return sum(1 for w in self._waiters if not w.done())

    @property
    def available_count(self) -> int:
        return self._max_running - self._running

    async def acquire(self, source: str) -> None:
        if self._running < self._max_running and not self.waiting_count:
            self._running += 1
            return
        waiting = self.waiting_count
        if self._max_queued is not None and waiting >= self._max_queued:
            display = self._name or source
            raise ConcurrencyLimitExceeded(
                f'Concurrency queue depth ({waiting + 1}) exceeds max_queued ({self._max_queued})'
                + (f' for {display}' if display else '')
            )
        handed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(handed)
        try:
            await handed
        except asyncio.CancelledError:
            if handed.done() and not handed.cancelled():
                self.release()  # the slot came as the caller was cancelled: the next one takes it
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(handed)
            raise

    def release(self) -> None:
        while self._waiters:
            handed = self._waiters.popleft()
            if not handed.done():
                handed.set_result(None)  # the slot passes straight on: `running` stays
                return
        self._running = max(0, self._running - 1)


AnyConcurrencyLimit: TypeAlias = 'int | ConcurrencyLimit | AbstractConcurrencyLimiter | None'
"""What `max_concurrency=` and `limit_model_concurrency` take (see the module docstring)."""


def normalize_to_limiter(limit: AnyConcurrencyLimit, *, name: str | None = None) -> AbstractConcurrencyLimiter | None:
    """The limiter `limit` stands for (None: no limit)."""
    if limit is None or isinstance(limit, AbstractConcurrencyLimiter):
        return limit
    if isinstance(limit, int | ConcurrencyLimit):
        return ConcurrencyLimiter.from_limit(limit, name=name)
    raise UserError(f'a concurrency limit is an int, a ConcurrencyLimit or a limiter, not {type(limit).__name__}')


@contextlib.asynccontextmanager
async def holding_slot(limiter: AbstractConcurrencyLimiter | None, source: str) -> AsyncIterator[None]:
    """Inside: one of `limiter`'s slots is held (nothing, without a limiter)."""
    if limiter is None:
        yield
        return
    await limiter.acquire(source)
    try:
        yield
    finally:
        limiter.release()
