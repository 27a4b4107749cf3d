"""`FallbackModel`: send a request to models in turn until one answers.

    model = FallbackModel('openai:gpt-5.2', 'anthropic:claude-sonnet-4-5')

Rules (each tested):
- A request goes to the first model. When it fails with an error `fallback_on` accepts, the same
  request goes to the next model, and so on. By default that is an HTTP 5xx or 429
  (`ModelHTTPError`) and a provider that cannot be reached or did not answer in time
  (`ModelConnectionError`, `TimeoutError`, `ConnectionError`). Any other error is raised at
  once: a 400 or a bad key fails the same way on the next try.
- When every model fails, `FallbackExceptionGroup` is raised with each attempt's error, in order.
- With the `request_timeout` setting, each model has a deadline of its own (`_deadline`), and
  one that runs out falls back by default.
- A stream falls back only before its first chunk: once a chunk reached the caller, the answer
  is under way and an error is raised as it is.
- The response keeps the name and provider of the model that answered (so its cost is that
  model's).
- The profile is what every model accepts (a history rendered for it is valid for each), and the
  context window is the smallest window any of them is known to have, so a compaction triggered
  by `context_window_used` comes early enough for whichever model answers. Models with unknown
  windows do not constrain it, as in pydantic-ai.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from threadline.exceptions import (
    FallbackExceptionGroup,
    ModelConnectionError,
    ModelHTTPError,
    ModelRequestTimeout,
    UserError,
)
from threadline.messages import ModelMessage, ModelResponse
from threadline.models._base import Model, ModelProfile, ModelRequestParameters, ModelSettings
from threadline.models._deadline import request_timeout, within_deadline
from threadline.models._stream import ModelStreamEvent

__all__ = ['FallbackModel', 'default_fallback_on']

FallbackOn = type[BaseException] | tuple[type[BaseException], ...] | Callable[[Exception], bool]


def default_fallback_on(error: Exception) -> bool:
    """Server-side trouble another provider may not have: HTTP 5xx, 429, no connection, a
    timeout (the transport's, or the `request_timeout` setting's)."""
    if isinstance(error, ModelHTTPError):
        return error.status_code >= 500 or error.status_code == 429
    return isinstance(error, ModelConnectionError | ModelRequestTimeout | TimeoutError | ConnectionError)


class FallbackModel(Model):
    """Tries `default_model`, then each of `fallback_models`, on the errors `fallback_on` accepts
    (exception types, or a function of the error; see the module docstring)."""

    def __init__(
        self,
        default_model: Model | str,
        *fallback_models: Model | str,
        fallback_on: FallbackOn = default_fallback_on,
    ) -> None:
        from threadline.models import infer_model

        self.models: list[Model] = [infer_model(m) for m in (default_model, *fallback_models)]
        if isinstance(fallback_on, type | tuple):
            kinds = fallback_on

            def accepts(error: Exception) -> bool:
                return isinstance(error, kinds)

            self._accepts: Callable[[Exception], bool] = accepts
        elif callable(fallback_on):
            self._accepts = fallback_on
        else:
            raise UserError(f'fallback_on must be exception types or a function of the error, not {fallback_on!r}')

    @property
    def priced(self) -> bool:
        return any(m.priced for m in self.models)

    @property
    def model_name(self) -> str:
        return 'fallback:' + ','.join(m.model_name for m in self.models)

    @property
    def system(self) -> str:
        return 'fallback:' + ','.join(m.system or '?' for m in self.models)

    @property
    def profile(self) -> ModelProfile:
        profiles = [m.profile for m in self.models]
        return ModelProfile(
            supports_inline_system_prompts=all(p.supports_inline_system_prompts for p in profiles),
            supports_tools=all(p.supports_tools for p in profiles),
            supports_json_schema_output=all(p.supports_json_schema_output for p in profiles),
            context_window=self.context_window,
        )

    @property
    def context_window(self) -> int | None:
        windows = [w for m in self.models if (w := m.context_window) is not None]
        return min(windows) if windows else None

    async def request(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        errors: list[Exception] = []
        timeout = request_timeout(model_settings)
        for model in self.models:
            try:
                answer = model.request(messages, model_settings, model_request_parameters)
                response = await within_deadline(model.model_name, timeout, answer)
            except Exception as error:
                if not self._accepts(error):
                    raise
                errors.append(error)
                continue
            return _stamped(response, model)
        raise self._all_failed(errors)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: object = None,
    ) -> AsyncIterator[Any]:
        errors: list[Exception] = []
        timeout = request_timeout(model_settings)
        for model in self.models:
            attempt = AsyncExitStack()
            try:
                started = asyncio.get_running_loop().time()
                opening = model.request_stream(messages, model_settings, model_request_parameters)
                stream = await within_deadline(model.model_name, timeout, attempt.enter_async_context(opening))
                if timeout is not None:  # each model's own deadline, to its last chunk
                    stream.deadline = (started + timeout, timeout)
                events = aiter(stream)
                first = await anext(events, _END)
            except Exception as error:
                await attempt.aclose()
                if not self._accepts(error):
                    raise
                errors.append(error)
                continue
            async with attempt:
                if stream.provider_name is None:
                    stream.provider_name = model.system
                yield _Started(stream, events, first)
            return
        raise self._all_failed(errors)

    def _all_failed(self, errors: list[Exception]) -> FallbackExceptionGroup:
        names = ', '.join(m.model_name for m in self.models)
        return FallbackExceptionGroup(f'all {len(self.models)} models failed ({names})', errors)

    def __repr__(self) -> str:
        return f'FallbackModel({", ".join(repr(m) for m in self.models)})'


def _stamped(response: ModelResponse, model: Model) -> ModelResponse:
    if response.model_name is None:
        response.model_name = model.model_name
    if response.provider_name is None:
        response.provider_name = model.system
    return response


_END: Any = object()


class _Started:
    """The answering model's stream, its first event already read (to know it started): iterating
    gives that event, then the rest; everything else is the stream's own."""

    def __init__(self, stream: Any, events: AsyncIterator[Any], first: Any) -> None:
        object.__setattr__(self, '_stream', stream)
        object.__setattr__(self, '_rest', events)
        object.__setattr__(self, '_first', first)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __setattr__(self, name: str, value: object) -> None:
        setattr(self._stream, name, value)  # `watch` and the like belong to the stream

    async def __aiter__(self) -> AsyncIterator[ModelStreamEvent]:
        if self._first is not _END:
            yield self._first
        async for event in self._rest:
            yield event
