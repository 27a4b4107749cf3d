"""`UsageLimits`: ceilings a run (or a whole conversation, with `usage=`) must stay under."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from threadline.exceptions import UsageLimitExceeded, UserError
from threadline.messages import ModelMessage, RunUsage
from threadline.models.budget import context_tokens, estimate_added_tokens, price_of, priced

if TYPE_CHECKING:
    from threadline.models import Model

__all__ = ['UsageLimits']


@dataclass
class UsageLimits:
    """Limits checked as the run goes: requests (and usage a continued run already carries over a
    token or cost ceiling) before each request, tool calls before tools run, tokens and cost after
    each response (the response that crosses a limit is kept, marked
    `state='interrupted'`).

    `cost_limit` (US dollars) needs a price for the model: genai-prices' (extra `prices`) for every
    model the run may use, else the run refuses to start (`UserError`) rather than ignore the
    limit. It is checked before each request too, against the cost of sending that request's
    estimated input tokens (`RunContext.context_tokens`) at the dearest of those models' prices.
    """

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
        # A run continued with `usage=` may already be over a token or cost ceiling: refuse before paying
        # for another request, as pydantic-ai does (`>`, as after a response).
        checks = (
            ('input_tokens_limit', self.input_tokens_limit, usage.input_tokens),
            ('total_tokens_limit', self.total_tokens_limit, usage.total_tokens),
            ('cost_limit', self.cost_limit, usage.cost),
        )
        for name, limit, value in checks:
            if limit is not None and value is not None and value > Decimal(str(limit)):
                raise UsageLimitExceeded(
                    f'The next request would exceed the {name} of {limit} ({name[:-6]}={value}).',
                    limit=name,
                    value=value,
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

    def check_cost_known(self, model: Model) -> None:
        """At run start: a `cost_limit` needs a price for every model the run may use."""
        if self.cost_limit is None:
            return

        unpriced = [m.model_name for m in _candidates(model) if not priced(_ref(m))]
        if unpriced:
            raise UserError(
                f'cost_limit is set, but there is no price for {", ".join(map(repr, unpriced))}: the limit could '
                'not be enforced. Install the price table (pip install "threadline[prices]"), use a model it '
                'lists, or drop cost_limit and use token limits.'
            )

    def check_cost_before_request(self, usage: RunUsage, model: Model, messages: Sequence[ModelMessage]) -> None:
        """Before a request: would sending it (its estimated input alone) cross `cost_limit`?"""
        if self.cost_limit is None:
            return

        tokens = context_tokens(messages)
        if tokens is None:
            tokens = estimate_added_tokens(messages)
        prices = [price_of(_ref(m), input_tokens=tokens) for m in _candidates(model)]
        known = [p for p in prices if p is not None]
        if not known:
            return
        projected = (usage.cost or Decimal(0)) + max(known)
        if projected > Decimal(str(self.cost_limit)):
            raise UsageLimitExceeded(
                f'The next request would exceed the cost_limit of {self.cost_limit} (cost so far={usage.cost or 0}, '
                f"the request's input alone about {max(known):.6f} for ~{tokens} tokens). Raise the limit or "
                'compact the history.',
                limit='cost_limit',
                value=projected,
            )

    def has_token_limits(self) -> bool:
        return any(
            v is not None
            for v in (self.input_tokens_limit, self.output_tokens_limit, self.total_tokens_limit, self.cost_limit)
        )


def _candidates(model: Model) -> list[Model]:
    """The models a request may go to (a `FallbackModel`'s candidates, or the model)."""
    inner = getattr(model, 'models', None)
    return list(inner) if isinstance(inner, list) and inner else [model]


def _ref(model: Model) -> tuple[str, str | None, str | None]:
    return (model.model_name, model.system, model.base_url)
