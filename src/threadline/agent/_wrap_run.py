"""`wrap_run` around a run the caller drives node by node (`iter()`, and the streams built on it).

`run()` awaits its whole run inside the `wrap_run` hooks. A caller of `iter()` holds the loop
itself, so the hooks run in a task of their own instead: their handler runs `before_run`, hands
the run to the caller, and returns (or raises) what the caller's block ended with.

Rules:
- The hooks enclose the run in time: code before `handler()` runs before `before_run`, code
  after it (a `finally` included) once the caller's block has ended, however it ended. The block
  is not left before the hooks finish.
- The handler returns the run's result, or None when the caller left the run before its end; it
  raises what the caller's block raised (cancellation included).
- Context variables a hook sets are not seen by the caller's block (another task runs them).
- A hook that returns without calling its handler cannot skip a run the caller drives: that is a
  `UserError`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from threadline.exceptions import UserError

__all__ = ['wrapped_run']


@contextlib.asynccontextmanager
async def wrapped_run(state: Any, start: Callable[[], Any]) -> AsyncIterator[Any]:
    """Run `state`'s `wrap_run` hooks around the caller's block; `start()` makes the `AgentRun`."""
    loop = asyncio.get_running_loop()
    entered: asyncio.Future[Any] = loop.create_future()
    finished: asyncio.Future[Any] = loop.create_future()

    async def lifecycle() -> Any:
        await state.capabilities.before_run(state.ctx)
        entered.set_result(start())
        return await finished

    hooks = asyncio.ensure_future(state.capabilities.wrap_run(state.ctx, lifecycle))
    await asyncio.wait([entered, hooks], return_when=asyncio.FIRST_COMPLETED)
    if not entered.done():
        entered.cancel()
        await hooks  # raises what a hook (or before_run) raised
        raise UserError(
            'a wrap_run hook returned without calling its handler: a run driven by iter() cannot be skipped'
        )
    agent_run = entered.result()
    try:
        yield agent_run
    except BaseException as exc:
        finished.set_exception(exc)
        with contextlib.suppress(BaseException):  # the block's own error is the one to raise
            await hooks
        raise
    finished.set_result(agent_run.result)
    await hooks
