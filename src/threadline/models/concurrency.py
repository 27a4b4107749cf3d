"""`ConcurrencyLimitedModel`: a model that takes at most so many requests at once (a provider's
rate limit, a local server's capacity), and the limiters it shares with agents.

Rules (pydantic-ai 2.62's): a request holds a slot from when it is sent until its response, or
its stream's end; nested wrappers over one limiter, or an agent and its model on one limiter,
are a `UserError` (a request would wait for itself). See `threadline.models._concurrency` for
how slots are handed out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from contextvars import ContextVar

from threadline.exceptions import UserError
from threadline.messages import ModelMessage, ModelResponse
from threadline.models._base import Model, ModelRequestParameters, ModelSettings
from threadline.models._concurrency import (
    AbstractConcurrencyLimiter,
    AnyConcurrencyLimit,
    ConcurrencyLimit,
    ConcurrencyLimiter,
    holding_slot,
    normalize_to_limiter,
)
from threadline.models._stream import StreamedResponse
from threadline.models.wrapper import WrapperModel

__all__ = [
    'AbstractConcurrencyLimiter',
    'AnyConcurrencyLimit',
    'ConcurrencyLimit',
    'ConcurrencyLimitedModel',
    'ConcurrencyLimiter',
    'holding',
    'holding_slot',
    'limit_model_concurrency',
    'normalize_to_limiter',
]

_HELD: ContextVar[tuple[AbstractConcurrencyLimiter, ...]] = ContextVar('threadline_held_limiters', default=())
"""The limiters whose slots the code running now holds (an agent's run, a model's request)."""


@contextmanager
def holding(limiter: AbstractConcurrencyLimiter) -> Iterator[None]:
    """Inside: `limiter` counts as held here (see `refuse_held`)."""
    token = _HELD.set((*_HELD.get(), limiter))
    try:
        yield
    finally:
        _HELD.reset(token)


def refuse_held(limiter: AbstractConcurrencyLimiter, what: str) -> None:
    """A `UserError` when the code running now already holds a slot of `limiter`."""
    if any(held is limiter for held in _HELD.get()):
        raise UserError(
            f'{what} uses a concurrency limiter whose slot this request already holds, which would deadlock: '
            'use separate limiters, or limit concurrency at one layer only.'
        )


class ConcurrencyLimitedModel(WrapperModel):
    """`wrapped` (a model or its name) taking at most `limiter`'s slots of requests at once."""

    def __init__(self, wrapped: Model | str, limiter: int | ConcurrencyLimit | AbstractConcurrencyLimiter) -> None:
        from threadline.models import infer_model

        super().__init__(infer_model(wrapped))
        chosen = normalize_to_limiter(limiter)
        if chosen is None:
            raise UserError('ConcurrencyLimitedModel needs a limit: an int, a ConcurrencyLimit or a limiter')
        self.limiter = chosen

    async def request(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        refuse_held(self.limiter, 'A ConcurrencyLimitedModel')
        async with holding_slot(self.limiter, f'model:{self.model_name}'):
            with holding(self.limiter):
                return await self.wrapped.request(messages, model_settings, model_request_parameters)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: object = None,
    ) -> AsyncIterator[StreamedResponse]:
        refuse_held(self.limiter, 'A ConcurrencyLimitedModel')
        async with holding_slot(self.limiter, f'model:{self.model_name}'), AsyncExitStack() as stack:
            with holding(self.limiter):  # a nested wrapper opened here sees the slot held
                opened = self.wrapped.request_stream(messages, model_settings, model_request_parameters, run_context)
                streamed = await stack.enter_async_context(opened)
            yield streamed  # the slot is held until the stream ends (it may end on another task)


def limit_model_concurrency(model: Model | str, limiter: AnyConcurrencyLimit) -> Model:
    """`model` limited to `limiter`'s concurrency (the model itself when `limiter` is None)."""
    from threadline.models import infer_model

    if limiter is None:
        return infer_model(model)
    return ConcurrencyLimitedModel(model, limiter)
