"""Await a coroutine in a copy of the current context, without a task of its own.

pydantic-ai runs each graph node, and each run's hooks, in a task, so the context variables they
set do not outlive them. A task per node costs two trips through the event loop per node (a
fifth of a fast step); stepping the coroutine ourselves, each step inside the copied context,
gives the same isolation for the cost of a function call.

Rules:
- Every step of the coroutine runs in the copy (taken when `isolated` is called); the caller's
  context never sees what it sets.
- What the coroutine awaits is awaited by the caller's task, unchanged; what the task is thrown
  (cancellation included) is thrown into the coroutine.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Coroutine, Generator
from typing import TypeVar

__all__ = ['isolated']

T = TypeVar('T')


class _Isolated(Awaitable[T]):
    __slots__ = ('_context', '_coro')

    def __init__(self, coro: Coroutine[object, object, T]) -> None:
        self._coro = coro
        self._context = contextvars.copy_context()

    def __await__(self) -> Generator[object, object, T]:
        coro, run = self._coro, self._context.run
        sent: object = None
        thrown: BaseException | None = None
        while True:
            try:
                waited = run(coro.send, sent) if thrown is None else run(coro.throw, thrown)
            except StopIteration as stop:
                result: T = stop.value
                return result
            thrown = None
            try:
                sent = yield waited
            except BaseException as error:  # noqa: BLE001 - thrown into the coroutine, as a task would
                thrown = error


def isolated(coro: Coroutine[object, object, T]) -> Awaitable[T]:
    """`await isolated(coro)` is `await coro`, with every step of it inside a copy of the
    current context (taken now)."""
    return _Isolated(coro)
