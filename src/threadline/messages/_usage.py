"""Token and cost accounting: per response (`RequestUsage`) and per run or conversation (`RunUsage`)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, ClassVar

import msgspec
from msgspec import UNSET, UnsetType

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

    def __add__(self, other: RequestUsage) -> RequestUsage:
        total = msgspec.structs.replace(self, details=dict(self.details))
        total._add_into(other)
        return total


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
