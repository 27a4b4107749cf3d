"""Ending a run from the application: `AgentRun.cancel()`, `RunContext.cancel()`, and `timeout=`.

Rules (pydantic-ai 2.62's):
- `cancel()` stops the run where it is: the task driving it is cancelled, so a model request or
  stream in flight is torn down and tool calls are cancelled (a tool step records the results
  that finished). When the `iter()` / `run()` block ends, the caller gets `RunCancelled`, which
  carries what the run completed: `all_messages()` is a history to resume from.
- `timeout=` (seconds, for the whole run) does the same at its deadline, as `RunTimedOut` (both a
  `RunCancelled` and a `TimeoutError`). A run started inside another run (from a tool) keeps the
  outer run's deadline when that is sooner: a timeout can shorten it, never extend it.
- `cancel()` may be called from any task or thread; it is idempotent, and a no-op once the block
  has ended.
- Cancelling the driving task from outside (`task.cancel()`) still raises `CancelledError`: when
  both happen, the outside cancellation wins.
- Capabilities hear a cancelled run through `on_run_error` (stores record it); none can turn it
  into a result.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from threadline.exceptions import RunCancelled, RunTimedOut, UserError
from threadline.messages import ModelMessagesTypeAdapter

if TYPE_CHECKING:
    from threadline.agent._state import RunState

__all__ = ['RunCancellation', 'cancellable', 'inherited_deadline']

_DEADLINE: ContextVar[float | None] = ContextVar('threadline_run_deadline', default=None)
"""The loop-time deadline of the run whose code is running (a nested run inherits it)."""


def inherited_deadline() -> float | None:
    return _DEADLINE.get()


class RunCancellation:
    """One run's cancellation: who drives it, whether (and why) the application stopped it."""

    def __init__(self, timeout: float | None = None) -> None:
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
            raise UserError(f'timeout must be a positive number of seconds, not {timeout!r}')
        self.timeout = timeout
        self.deadline: float | None = None
        """When the run must end, in the loop's time (its own timeout, or a sooner inherited one)."""
        self.reason: str | None = None  # 'cancelled' or 'timed out', once the application stopped the run
        self._task: asyncio.Task[object] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._ours = 0  # how many of the task's cancellations are ours
        self._timer: asyncio.TimerHandle | None = None
        self._ended = False

    def start(self) -> object:
        """Take the current task as the run's, arm the deadline; returns a token for `end`."""
        self._task, self._loop = asyncio.current_task(), asyncio.get_running_loop()
        self._thread = threading.get_ident()
        inherited = _DEADLINE.get()
        own = self._loop.time() + self.timeout if self.timeout is not None else None
        self.deadline = own if inherited is None else inherited if own is None else min(own, inherited)
        if self.deadline is not None:
            self._timer = self._loop.call_at(self.deadline, self._stop, 'timed out')
        return _DEADLINE.set(self.deadline)

    def end(self, token: object) -> None:
        self._ended = True
        if self._timer is not None:
            self._timer.cancel()
        _DEADLINE.reset(token)  # type: ignore[arg-type]

    @property
    def wall_deadline(self) -> datetime | None:
        """The deadline as a UTC time (for `RunContext.deadline`)."""
        if self.deadline is None or self._loop is None:
            return None
        return datetime.now(tz=UTC) + timedelta(seconds=self.deadline - self._loop.time())

    def cancel(self) -> None:
        """Stop the run (from any task or thread)."""
        if self._ended or self._loop is None:
            return
        if threading.get_ident() == self._thread:
            self._stop('cancelled')
        else:
            self._loop.call_soon_threadsafe(self._stop, 'cancelled')

    def _stop(self, reason: str) -> None:
        if self._ended or self.reason is not None or self._task is None or self._task.done():
            return
        self.reason = reason
        self._ours += 1
        self._task.cancel()

    def stopped(self, error: BaseException) -> tuple[type[RunCancelled], str] | None:
        """What `error` (reaching the end of the run's block) stands for, when it is the
        application's cancellation: the error to raise and its message. None otherwise (a
        cancellation from outside as well wins)."""
        task = self._task
        if not isinstance(error, asyncio.CancelledError) or self.reason is None or task is None:
            return None
        if task.cancelling() > self._ours:
            return None
        for _ in range(self._ours):
            task.uncancel()
        self._ours = 0
        if self.reason == 'timed out':
            within = (
                f'its timeout of {self.timeout:g} seconds' if self.timeout is not None else "its outer run's deadline"
            )
            return RunTimedOut, f'the run did not finish within {within}'
        return RunCancelled, 'the run was cancelled'


@contextlib.asynccontextmanager
async def cancellable(state: RunState) -> AsyncIterator[None]:
    """The run's block: its cancellation armed inside, and the application's cancellation of it
    raised as `RunCancelled` / `RunTimedOut` with what the run completed (capabilities hear it
    through `on_run_error`)."""
    cancellation = state.ctx._cancellation
    if cancellation is None:
        yield
        return
    token = cancellation.start()
    try:
        yield
    except asyncio.CancelledError as error:
        stopped = cancellation.stopped(error)
        if stopped is None:
            raise
        kind, message = stopped
        ctx = state.ctx
        stop = kind(
            message,
            messages=state.history,
            new_message_index=state.new_message_index,
            usage=ctx.usage,
            metadata=ctx.metadata,
            run_id=ctx.run_id,
            conversation_id=ctx.conversation_id,
            dump_json=ModelMessagesTypeAdapter.dump_json,
        )
        await state.capabilities.announce_cancelled(ctx, stop)
        raise stop from None
    finally:
        cancellation.end(token)
