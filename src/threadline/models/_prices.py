"""Prices and context windows from genai-prices (extra `prices`, part of every provider extra).

Rules:
- A model is found by its provider's API URL first (more specific: several providers resell the
  same models), then by its provider id (`openai`, `anthropic`, `google`).
- Whatever genai-prices does not know is unknown: `None`, never a guess. The same goes for
  everything when the package is not installed.
- A lookup that fails in any other way warns (`CostCalculationFailedWarning`) and is unknown:
  a price never fails a run.
- Prices come from the package's bundled table (no network); a cost is a `Decimal` in US dollars.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from threadline.exceptions import CostCalculationFailedWarning

__all__ = ['ModelRef', 'known_context_window', 'price_of', 'priced']

ModelRef = tuple[str, str | None, str | None]
"""(model name, provider id, provider API URL): what a lookup matches on."""


def _references(ref: ModelRef) -> Iterator[tuple[str | None, str | None]]:
    _, provider, url = ref
    if url:
        yield None, url
    if provider:
        yield provider, None


@functools.cache
def _snapshot() -> Any:
    try:
        from genai_prices.data_snapshot import get_snapshot
    except ImportError:
        return None
    return get_snapshot()


@functools.lru_cache(maxsize=256)
def _find(ref: ModelRef) -> tuple[str, Any] | None:
    """(provider id, model info) for `ref`, or None when genai-prices does not know it."""
    snapshot = _snapshot()
    if snapshot is None:
        return None
    for provider_id, url in _references(ref):
        try:
            provider, info = snapshot.find_provider_model(ref[0], None, provider_id, url)
        except LookupError:
            continue
        return provider.id, info
    return None


def known_context_window(ref: ModelRef) -> int | None:
    """The model's context window in tokens as genai-prices records it, else None."""
    found = _find(ref)
    window = found[1].context_window if found is not None else None
    return int(window) if window else None


def priced(ref: ModelRef) -> bool:
    """Whether genai-prices has a price for the model."""
    found = _find(ref)
    return found is not None and bool(found[1].prices)


def price_of(ref: ModelRef, *, input_tokens: int = 0, output_tokens: int = 0, **details: int) -> Decimal | None:
    """What the tokens cost at the model's current price, or None when it has none. `details`
    are genai-prices usage fields (`cache_read_tokens`, `cache_write_tokens`, ...)."""
    found = _find(ref)
    if found is None or not found[1].prices:
        return None
    from genai_prices import Usage, calc_price

    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens, **details)
    try:
        result = calc_price(usage, ref[0], provider_id=found[0])
    except (LookupError, ValueError):  # a model or usage it cannot price: unknown, as expected
        return None
    except Exception as error:  # noqa: BLE001 - a price must never fail a run
        warnings.warn(f'Failed to get cost: {type(error).__name__}', CostCalculationFailedWarning, stacklevel=2)
        return None
    return Decimal(result.total_price)
