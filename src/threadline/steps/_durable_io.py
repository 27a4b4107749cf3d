"""How StepPersistence reaches its store while a durability engine records the run as steps.

A durability capability (`threadline.durable.DBOSDurability`) sets `DURABLE_IO` for the run it
makes durable. StepPersistence then makes its run-start read and every step write through it, so
the engine checkpoints each: when the run replays after a crash, a read answers what it answered
the first time and a write that completed is not made again, so the run's checks and expected
revisions are the ones it had the first time. Writes do not go behind a model request then (an
engine's steps take their places in the order they start) and ride with the next write instead.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from threadline.exceptions import ConflictError
from threadline.storage import StepWrite, SyncStore

__all__ = ['DURABLE_IO', 'DurableIO', 'write_once']

T = TypeVar('T')


class DurableIO(Protocol):
    """Runs `operation(*args)` (synchronous store code) as the engine's step called `name`."""

    async def __call__(self, name: str, operation: Callable[..., T], *args: Any) -> T: ...


DURABLE_IO: contextvars.ContextVar[DurableIO | None] = contextvars.ContextVar('threadline_durable_io', default=None)


def write_once(store: SyncStore, write: StepWrite) -> int:
    """`store.step_write(write)`, safe to make again after a crash that came between its commit
    and the engine's checkpoint of it. Made again, the write finds the store holding it already:

    - it expected a revision, and the store is one revision on, its tip the write's last message
      (or, for a write with no messages, the run closed as the write closes it): that is its
      revision;
    - it expected none (the conversation's first write), and the conversation exists with the
      write's last message as its tip: the same.

    Anything else is a real conflict, raised as it is."""
    last = [*(write.history or ()), *write.messages][-1:]
    if write.expected_revision is None and last:
        start = store.run_start(write.conversation_id, scope=write.scope)
        if start is not None and start.tip == last[0]:
            return start.revision  # the first write landed before the crash
    try:
        return store.step_write(write)
    except ConflictError:
        if write.expected_revision is None:
            raise
        start = store.run_start(write.conversation_id, scope=write.scope)
        if start is None or start.revision != write.expected_revision + 1:
            raise
        finish = write.finish
        run = store.get_run(write.run_id, scope=write.scope) if finish is not None else None
        closed = finish is not None and run is not None and run.status == finish.status
        if not ((last and start.tip == last[0]) or (not last and closed)):
            raise
        return start.revision
