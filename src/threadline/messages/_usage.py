"""Token and cost accounting: per response (`RequestUsage`) and per run or conversation (`RunUsage`)."""

from __future__ import annotations

import warnings
from decimal import Decimal
from typing import Any, ClassVar

import msgspec
from msgspec import UNSET, UnsetType

from threadline.exceptions import UsageExtractionFailedWarning
from threadline.messages._base import LegacyName, MessageMeta, WireStruct, legacy_field

__all__ = ['RequestUsage', 'RunUsage']

_COUNTERS = (
    'input_tokens',
    'cache_write_tokens',
    'cache_write_1h_tokens',
    'cache_read_tokens',
    'output_tokens',
    'output_reasoning_tokens',
    'input_audio_tokens',
    'cache_audio_read_tokens',
    'output_audio_tokens',
)


class _UsageMeta(MessageMeta):
    """Drops `unmeasured_requests=0` at construction: the wire form leaves the key out when it is 0."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get('unmeasured_requests') == 0:
            del kwargs['unmeasured_requests']
        return super().__call__(*args, **kwargs)


class _UsageBase(WireStruct, metaclass=_UsageMeta, kw_only=True):
    input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    _unmeasured_requests: int | UnsetType = msgspec.field(default=UNSET, name='unmeasured_requests')
    output_reasoning_tokens: int = 0
    input_audio_tokens: int = 0
    cache_audio_read_tokens: int = 0
    output_audio_tokens: int = 0
    audio_seconds: float = 0.0
    details: dict[str, int] = msgspec.field(default_factory=dict)
    cost: Decimal | None = None
    _legacy_request_tokens: LegacyName | UnsetType = legacy_field('request_tokens')
    _legacy_response_tokens: LegacyName | UnsetType = legacy_field('response_tokens')

    _init_aliases: ClassVar[dict[str, str] | None] = {'unmeasured_requests': '_unmeasured_requests'}

    @property
    def unmeasured_requests(self) -> int:
        """Requests whose token counts the provider did not report (left out of the JSON when 0)."""
        value = self._unmeasured_requests
        return 0 if value is UNSET else value

    @unmeasured_requests.setter
    def unmeasured_requests(self, value: int) -> None:
        self._unmeasured_requests = value or UNSET

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def cache_hit_ratio(self) -> float:
        """The share of input tokens read from the provider's prompt cache (0.0 with no input)."""
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else 0.0

    def has_values(self) -> bool:
        """Whether any counter, detail or cost is non-zero (a detail recorded as 0 is no usage)."""
        return any(getattr(self, name) for name in _COUNTERS) or any(self.details.values()) or bool(self.cost)

    def _add_into(self, other: _UsageBase) -> None:
        for name in _COUNTERS:
            value = getattr(other, name)
            if value:
                setattr(self, name, getattr(self, name) + value)
        if other.audio_seconds:
            self.audio_seconds += other.audio_seconds
        if other.unmeasured_requests:
            self.unmeasured_requests = self.unmeasured_requests + other.unmeasured_requests
        if other.details:
            details = dict(self.details)
            for key, value in other.details.items():
                details[key] = details.get(key, 0) + value
            self.details = details
        if other.cost is not None:
            self.cost = other.cost if self.cost is None else self.cost + other.cost


class RequestUsage(_UsageBase, kw_only=True):
    """What one model response used: tokens by kind, and the cost when it is known."""

    @property
    def requests(self) -> int:
        """Always 1: this is one request's usage (a run counts its requests itself)."""
        return 1

    def incr(self, other: RequestUsage) -> None:
        """Add `other` into this usage in place."""
        self._add_into(other)

    @classmethod
    def extract(
        cls,
        data: object,
        *,
        provider: str,
        provider_url: str,
        provider_fallback: str,
        api_flavor: str = 'default',
        details: dict[str, int] | None = None,
    ) -> RequestUsage:
        """The usage in a provider's answer `data` (its JSON, decoded), read by genai-prices'
        rules for that provider, for a custom model's `request` (pydantic-ai 2.62's method).

        Rules: the provider is looked up by its API URL, then `provider`, then
        `provider_fallback`; the first that genai-prices knows and that reads `data` gives the
        counts. A cost a Pydantic AI Gateway wrote into `data['usage']` is kept as the cost.
        When a lookup or a read fails with an error (not merely an unknown provider), an
        `UsageExtractionFailedWarning` names the error's type, never the data, and the usage
        is empty but for that cost. Needs genai-prices (the provider extras bring it).
        """
        from genai_prices.data_snapshot import get_snapshot  # a provider extra's dependency

        cost, failure = gateway_cost(data), None
        for provider_id, url in ((None, provider_url), (provider, None), (provider_fallback, None)):
            if not provider_id and not url:
                continue
            try:
                found = get_snapshot().find_provider(None, provider_id, url)
                extracted = found.extract_usage(data, api_flavor=api_flavor)[1]
            except LookupError:
                continue
            except Exception as error:  # noqa: BLE001 - genai-prices may raise anything on odd data
                failure = error
                continue
            counts = {k: v for k, v in vars(extracted).items() if v is not None and k in _COUNTERS}
            return cls(**counts, details=dict(details or {}), cost=cost)
        if failure is not None:
            warnings.warn(
                f'Failed to extract usage with `genai-prices`: {type(failure).__name__}',
                UsageExtractionFailedWarning,
                stacklevel=2,
            )
        return cls(details=dict(details or {}), cost=cost)

    def __add__(self, other: RequestUsage) -> RequestUsage:
        total = msgspec.structs.replace(self, details=dict(self.details))
        total._add_into(other)
        return total


def gateway_cost(data: object) -> Decimal | None:
    """The cost a Pydantic AI Gateway wrote into an answer's `usage` (`logfire_ai_gateway.cost`,
    or the older `pydantic_ai_gateway.cost_estimate`), as a decimal; 0 is a real cost (a cache
    hit), a negative or non-finite one is none."""
    usage = data.get('usage') if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return None
    for name, key in (('logfire_ai_gateway', 'cost'), ('pydantic_ai_gateway', 'cost_estimate')):
        block = usage.get(name)
        value = block.get(key) if isinstance(block, dict) else None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            continue
        try:
            cost = Decimal(str(value))
        except ArithmeticError:
            continue
        if cost.is_finite() and cost >= 0:  # NaN or a negative cost would break cost limits
            return cost
    return None


class RunUsage(_UsageBase, kw_only=True):
    """Cumulative usage of a run, or of a conversation when carried into the next run with `usage=`."""

    requests: int = 0
    tool_calls: int = 0

    def incr(self, other: RunUsage | RequestUsage) -> None:
        """Add `other` in place (a `RequestUsage` adds tokens and cost; requests are counted by the run)."""
        self._add_into(other)
        if isinstance(other, RunUsage):
            self.requests += other.requests
            self.tool_calls += other.tool_calls

    def __add__(self, other: RunUsage | RequestUsage) -> RunUsage:
        total = msgspec.structs.replace(self, details=dict(self.details))
        total.incr(other)
        return total
