"""`ProcessHistory`: rewrite the run's history before each model request (and store the result)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from threadline.agent.capability import AbstractCapability, CapabilityDepsT, ModelRequestContext
from threadline.agent.tools import takes_run_context
from threadline.messages import ModelMessage

if TYPE_CHECKING:
    from threadline.agent import RunContext

__all__ = ['ProcessHistory']

HistoryProcessor = Callable[..., Any]


class ProcessHistory(AbstractCapability[CapabilityDepsT]):
    """Runs `processor(messages)` or `processor(ctx, messages)` before every model request.

    Rules:
    - the processor gets a copy of the messages about to be sent and returns the new list; that
      list is both sent and stored as the run's history (unlike a `before_model_request` hook that
      replaces `request_context.messages`, which changes only what is sent);
    - sync and async processors both work (a sync one runs in a worker thread);
    - whether it takes a `RunContext` is decided from its resolved type hints; an annotation that
      cannot be resolved raises `UserError` rather than guessing;
    - the result must be non-empty and end with a `ModelRequest` (checked by the run);
    - to keep a message out of `new_messages()`, preserve the trailing request's parts, timestamp,
      instructions and metadata; to add one to it, stamp it with `run_id=ctx.run_id`.
    Several `ProcessHistory` capabilities run in the order given.
    """

    def __init__(self, processor: HistoryProcessor) -> None:

        self.processor = processor
        self.takes_ctx = takes_run_context(processor)
        is_plain = inspect.isfunction(processor) or inspect.ismethod(processor)
        target = processor if is_plain else type(processor).__call__
        self._is_async = inspect.iscoroutinefunction(target)

    def __repr__(self) -> str:
        return f'ProcessHistory({getattr(self.processor, "__name__", self.processor)!r})'

    async def before_model_request(
        self, ctx: RunContext[CapabilityDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        messages = list(request_context.messages)
        args: tuple[Any, ...] = (ctx, messages) if self.takes_ctx else (messages,)
        if self._is_async:
            result = await self.processor(*args)
        else:
            loop = asyncio.get_running_loop()
            call = functools.partial(contextvars.copy_context().run, self.processor, *args)
            result = await loop.run_in_executor(None, call)
            if inspect.isawaitable(result):
                result = await result
        processed: list[ModelMessage] = list(result)
        request_context.messages = list(processed)
        ctx.messages[:] = processed
        return request_context
