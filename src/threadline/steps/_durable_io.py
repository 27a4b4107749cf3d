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

__all__ = ['DURABLE_IO', 'DurableIO']

T = TypeVar('T')


class DurableIO(Protocol):
    """Runs `operation(*args)` (synchronous store code) as the engine's step called `name`."""

    async def __call__(self, name: str, operation: Callable[..., T], *args: Any) -> T: ...


DURABLE_IO: contextvars.ContextVar[DurableIO | None] = contextvars.ContextVar('threadline_durable_io', default=None)
