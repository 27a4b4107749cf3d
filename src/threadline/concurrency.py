"""Concurrency limits, at the import path pydantic-ai applications use (`from threadline.concurrency
import ConcurrencyLimiter`): `Agent(max_concurrency=...)` and `ConcurrencyLimitedModel` take an
int, a `ConcurrencyLimit` (with `max_queued` for backpressure) or a limiter to share.
"""

from __future__ import annotations

from threadline._public import publish
from threadline.models.concurrency import (
    AbstractConcurrencyLimiter,
    AnyConcurrencyLimit,
    ConcurrencyLimit,
    ConcurrencyLimiter,
)

__all__ = ['AbstractConcurrencyLimiter', 'AnyConcurrencyLimit', 'ConcurrencyLimit', 'ConcurrencyLimiter']

publish(__name__, globals(), __all__)  # after every name above exists
