"""`WrapperModel`: a model that hands everything to another, so a subclass changes one thing
(how requests are sent, what is recorded) of any model, as pydantic-ai's does.

Rules:
- the name, provider, profile, URL and context window are the wrapped model's, so a response
  it serves records the wrapped model;
- `request` and `request_stream` go to the wrapped model; override them to change a request;
- entering the wrapper (`async with`) enters the wrapped model, and leaving it leaves that,
  except inside `borrowing(wrapped)`: a capability's wrapper around the run's model, entered
  for one request, leaves the model to its owner (as pydantic-ai 2.62's does).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar

from threadline.messages import ModelMessage, ModelResponse
from threadline.models._base import Model, ModelProfile, ModelRequestParameters, ModelSettings
from threadline.models._stream import StreamedResponse

__all__ = ['WrapperModel', 'borrowing']


class WrapperModel(Model):
    """`wrapped` behind an interface a subclass overrides in part."""

    def __init__(self, wrapped: Model) -> None:
        self.wrapped = wrapped

    @property
    def priced(self) -> bool:
        return self.wrapped.priced

    @property
    def model_name(self) -> str:
        return self.wrapped.model_name

    @property
    def system(self) -> str | None:
        return self.wrapped.system

    @property
    def profile(self) -> ModelProfile:
        return self.wrapped.profile

    @property
    def base_url(self) -> str | None:
        return self.wrapped.base_url

    @property
    def context_window(self) -> int | None:
        return self.wrapped.context_window

    def structured_output_mode(self, settings: ModelSettings | None, params: ModelRequestParameters) -> str:
        return self.wrapped.structured_output_mode(settings, params)

    async def request(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        return await self.wrapped.request(messages, model_settings, model_request_parameters)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: object = None,
    ) -> AsyncIterator[StreamedResponse]:
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as streamed:
            yield streamed

    async def __aenter__(self) -> WrapperModel:
        if _BORROWED.get() is not self.wrapped:
            await self.wrapped.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        if _BORROWED.get() is self.wrapped:
            return None
        return await self.wrapped.__aexit__(*exc_info)

    def __repr__(self) -> str:
        return f'{type(self).__name__}({self.wrapped!r})'


_BORROWED: ContextVar[Model | None] = ContextVar('threadline_borrowed_model', default=None)
"""The model a capability's wrapper serves one request around: its owner (`async with agent:`)
opens and closes it, so the wrapper's own entry must not (closing it could close a client
another request is using)."""


@contextmanager
def borrowing(model: Model) -> Iterator[None]:
    """Inside: a `WrapperModel` around `model` enters and exits without entering `model`."""
    token = _BORROWED.set(model)
    try:
        yield
    finally:
        _BORROWED.reset(token)
