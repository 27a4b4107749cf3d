"""`Agent(max_concurrency=...)`: a run holds one of the agent's concurrency slots from its start to
its end (waiting for one is cancellable, like the rest of the run).

Rules (pydantic-ai 2.62's): a run started again by the task that holds a slot of the same limiter
would wait for itself, so it is a `RuntimeError` naming the fix; a model limited by the agent's
own limiter is refused when it is asked (see `threadline.models.concurrency`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextvars import ContextVar

from threadline.models.concurrency import AbstractConcurrencyLimiter, ConcurrencyLimiter, holding, holding_slot

__all__ = ['run_slot']

_RUNS: ContextVar[tuple[tuple[object, AbstractConcurrencyLimiter], ...]] = ContextVar(
    'threadline_run_slots', default=()
)


@contextlib.asynccontextmanager
async def run_slot(limiter: AbstractConcurrencyLimiter | None, agent_name: str | None) -> AsyncIterator[None]:
    if limiter is None:
        yield
        return
    task = asyncio.current_task()
    if isinstance(limiter, ConcurrencyLimiter) and any(t is task and held is limiter for t, held in _RUNS.get()):
        raise RuntimeError(
            'This task already holds a slot for this agent concurrency limiter. Use a separate limiter for the nested run.'
        )
    async with holding_slot(limiter, f'agent:{agent_name}'):
        token = _RUNS.set((*_RUNS.get(), (task, limiter)))
        try:
            with holding(limiter):
                yield
        finally:
            _RUNS.reset(token)
