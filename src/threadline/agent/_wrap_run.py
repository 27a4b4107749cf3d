"""The run lifecycle around a run the caller drives node by node (`iter()`, and the streams built on it).

`run()` awaits its whole run inside the `wrap_run` hooks. A caller of `iter()` holds the loop
itself, so the hooks run in a task of their own instead: their handler runs `before_run`, hands
the run to the caller, and returns (or raises) what the caller's block ended with. This is
pydantic-ai 2.62's hand-off, and its rules are these:

- The hooks enclose the run in time: code before `handler()` runs before `before_run`, code
  after it (a `finally` included) once the caller's block has ended, however it ended. The block
  is not left before the hooks finish.
- Context variables that `wrap_run` and `before_run` set are set in the caller's block for the
  run's length (its hooks, tools and model see them), then restored; the values the block left
  are set back in the hooks' task before their code after `handler()` runs. Nothing a run sets
  outlives it in the caller.
- A hook that returns a result without calling its handler skips the run: the block gets a run
  that has already ended with that result (it yields no nodes).
- The handler returns the run's result, or None when the caller left the run before its end; it
  raises what the caller's block raised (cancellation included). A hook that catches that error
  and returns a result recovers the run: the block's error is suppressed and `agent_run.result`
  is the hook's. A hook that raises instead leaves the block's own error to propagate;
  cancellation and interpreter exits are never recovered.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from threadline.agent._result import AgentRunResult
    from threadline.agent._run import AgentRun
    from threadline.agent._state import RunState

__all__ = ['Changes', 'context_changes', 'handed_over_or_done', 'wrapped_run']

Changes = list[tuple[contextvars.ContextVar[object], object]]
"""Context variables and the values to set them to."""
_NEVER_RECOVERED = (asyncio.CancelledError, GeneratorExit, KeyboardInterrupt, SystemExit)


def context_changes(before: contextvars.Context, after: contextvars.Context) -> Changes:
    """The variables `after` holds that `before` did not, or holds with another value."""
    return [(var, value) for var, value in after.items() if var not in before or before[var] is not value]


async def handed_over_or_done(handed: asyncio.Future[Any], hooks: asyncio.Future[Any]) -> None:
    """Wait until the hooks' handler hands over (`handed` is set) or the hooks end without it;
    cancelled while waiting, the hooks are cancelled too and waited for."""
    try:
        await asyncio.wait([handed, hooks], return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        hooks.cancel()
        with contextlib.suppress(BaseException):
            await hooks
        raise


@contextlib.asynccontextmanager
async def wrapped_run(
    state: RunState, start: Callable[[], AgentRun[Any]], ended: Callable[[AgentRunResult[Any]], AgentRun[Any]]
) -> AsyncIterator[AgentRun[Any]]:
    """Run `state`'s run hooks around the caller's block. `start()` makes the `AgentRun`;
    `ended(result)` makes one that has already ended, for a hook that skips the run."""
    loop = asyncio.get_running_loop()
    entered: asyncio.Future[AgentRun[Any]] = loop.create_future()
    # The run's result, or None when the caller left before its end (a handler's result all the same).
    finished: asyncio.Future[AgentRunResult[Any]] = loop.create_future()
    outer = contextvars.copy_context()
    changes: Changes = []
    left: list[contextvars.Context] = []

    async def lifecycle() -> AgentRunResult[Any]:
        await state.capabilities.before_run(state.ctx)
        changes[:] = context_changes(outer, contextvars.copy_context())
        entered.set_result(start())
        try:
            return await finished
        finally:
            for var, value in context_changes(contextvars.copy_context(), left[0]) if left else ():
                var.set(value)

    hooks = asyncio.ensure_future(state.capabilities.wrap_run(state.ctx, lifecycle))
    await handed_over_or_done(entered, hooks)
    if not entered.done():
        entered.cancel()
        yield ended(await hooks)  # `await hooks` raises what a hook (or before_run) raised
        return
    agent_run = entered.result()
    tokens = [(var, var.set(value)) for var, value in changes]
    try:
        try:
            yield agent_run
        except BaseException as exc:
            left.append(contextvars.copy_context())
            if isinstance(exc, (GeneratorExit, KeyboardInterrupt, SystemExit)):
                hooks.cancel()
                raise
            finished.set_exception(exc)
            try:
                recovered = await hooks
            except BaseException:  # noqa: BLE001 - the block's own error is the one raised
                raise exc from None
            if isinstance(exc, _NEVER_RECOVERED) or recovered is None:
                raise
            agent_run._recovered(recovered)
            return
        left.append(contextvars.copy_context())
        finished.set_result(cast('AgentRunResult[Any]', agent_run.result))
        agent_run._recovered(await hooks)
    finally:
        for var, token in reversed(tokens):
            var.reset(token)
