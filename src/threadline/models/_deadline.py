"""`request_timeout`: a deadline on one request to one model, however the SDK retries.

Rules (pydantic-ai 2.62's `ModelSettings['request_timeout']`):
- The deadline starts when the request is sent and covers every attempt the provider's SDK and
  HTTP transport make; for a stream it covers opening it and reading it to its last chunk.
- Past it the request is cancelled and `ModelRequestTimeout` is raised (a `TimeoutError` raised
  by anything else is left as it is).
- A `FallbackModel` gives each of its models a deadline of its own, and by default falls back
  when one runs out (a stream's deadline covers the whole `FallbackModel`).
- The setting must be a positive number of seconds: anything else is a `UserError` naming it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from threadline.exceptions import ModelRequestTimeout, UserError
from threadline.models._base import ModelSettings

__all__ = ['request_timeout', 'within_deadline']

T = TypeVar('T')


def request_timeout(settings: ModelSettings | None) -> float | None:
    """The `request_timeout` in `settings`, checked (None when unset)."""
    timeout = (settings or {}).get('request_timeout')
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise UserError(f'model setting request_timeout must be a positive number of seconds, not {timeout!r}')
    return float(timeout)


async def within_deadline(model_name: str, timeout: float | None, call: Awaitable[T]) -> T:
    """`call`'s result, or `ModelRequestTimeout` once `timeout` seconds have passed."""
    if timeout is None:
        return await call
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            return await call
    except TimeoutError:
        if scope.expired():
            raise ModelRequestTimeout(model_name, timeout) from None
        raise
