"""`UsageLimits`: ceilings a run (or a whole conversation, with `usage=`) must stay under."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from ..exceptions import UsageLimitExceeded
from ..messages import RunUsage

__all__ = ['UsageLimits']


@dataclass
class UsageLimits:
    """Limits checked as the run goes: requests before each request, tool calls before tools run,
    tokens and cost after each response (the response that crosses a limit is kept, marked
    `state='interrupted'`)."""

    request_limit: int | None = 50
    tool_calls_limit: int | None = None
    input_tokens_limit: int | None = None
    output_tokens_limit: int | None = None
    total_tokens_limit: int | None = None
    cost_limit: Decimal | float | None = None

    def check_before_request(self, usage: RunUsage) -> None:
        if self.request_limit is not None and usage.requests >= self.request_limit:
            raise UsageLimitExceeded(
                f'The next request would exceed the request_limit of {self.request_limit} '
                f'(requests={usage.requests}). Raise the limit or end the conversation sooner.',
                limit='request_limit',
                value=usage.requests,
            )

    def check_tool_calls(self, usage: RunUsage, new_calls: int) -> None:
        if self.tool_calls_limit is not None and usage.tool_calls + new_calls > self.tool_calls_limit:
            raise UsageLimitExceeded(
                f'The next tool call(s) would exceed the tool_calls_limit of {self.tool_calls_limit} '
                f'(tool_calls={usage.tool_calls + new_calls}).',
                limit='tool_calls_limit',
                value=usage.tool_calls + new_calls,
            )

    def check_tokens(self, usage: RunUsage) -> None:
        checks = (
            ('input_tokens_limit', self.input_tokens_limit, usage.input_tokens),
            ('output_tokens_limit', self.output_tokens_limit, usage.output_tokens),
            ('total_tokens_limit', self.total_tokens_limit, usage.total_tokens),
        )
        for name, limit, value in checks:
            if limit is not None and value > limit:
                raise UsageLimitExceeded(
                    f'Exceeded the {name} of {limit} ({name[:-6]}={value}).', limit=name, value=value
                )
        if self.cost_limit is not None and usage.cost is not None and usage.cost > Decimal(str(self.cost_limit)):
            raise UsageLimitExceeded(
                f'Exceeded the cost_limit of {self.cost_limit} (cost={usage.cost}).',
                limit='cost_limit',
                value=usage.cost,
            )

    def has_token_limits(self) -> bool:
        return any(
            v is not None
            for v in (self.input_tokens_limit, self.output_tokens_limit, self.total_tokens_limit, self.cost_limit)
        )
