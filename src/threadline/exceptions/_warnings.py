"""The warnings Threadline emits, by the names pydantic-ai 2.62 gives them.

A warning says something went on that the application may want to know about but the run does
not stop for: a setting a model ignores, a price that could not be worked out, a history edited in
place. Each is its own class, so an application can turn one into an error with a warnings filter
(`warnings.filterwarnings('error', category=UnsupportedSettingWarning)`) and leave the rest.
"""

from __future__ import annotations

__all__ = [
    'CostCalculationFailedWarning',
    'CostNotFoundWarning',
    'MessageHistoryMutatedWarning',
    'PydanticAIDeprecationWarning',
    'ThreadlineDeprecationWarning',
    'UnsupportedSettingWarning',
    'UsageExtractionFailedWarning',
    'UsageLimitUnavailableWarning',
]


class ThreadlineDeprecationWarning(UserWarning):
    """A deprecated Threadline API was used. A `UserWarning`, not a `DeprecationWarning`, so it
    shows by default (Python hides `DeprecationWarning` outside `__main__`)."""


PydanticAIDeprecationWarning = ThreadlineDeprecationWarning
"""pydantic-ai's name for it, so `except`/filters written for pydantic-ai keep working."""


class UnsupportedSettingWarning(UserWarning):
    """A model ignores a `ModelSettings` field that changes what the request guarantees.

    Rules: the guarantee settings are `timeout`, `max_retries`, `stop_sequences`, `extra_headers`,
    `extra_body`, and `parallel_tool_calls=False` when the request offers function tools. A model
    that ignores one warns on each request that sets it, wherever it was set (run, agent, model,
    capability). Tuning knobs (`temperature`, `seed`, ...) a model ignores silently, so one set of
    settings works across models. `request_timeout` never warns: Threadline enforces it for every
    model itself.
    """


class MessageHistoryMutatedWarning(Warning):
    """A message already recorded in a span was changed in place; earlier spans show the old
    content. Build a new message or part (`dataclasses.replace`) instead of editing one."""


class CostCalculationFailedWarning(Warning):
    """Working out a response's price failed in an unexpected way; its cost stays unknown (None).
    A model genai-prices does not know is not a failure and does not warn."""


class CostNotFoundWarning(Warning):
    """No cost could be worked out where one was expected. Threadline refuses a `cost_limit` for a
    model with no price before the run starts (a `UserError`), so it does not emit this one; it is
    here for code that filters or raises it."""


class UsageExtractionFailedWarning(Warning):
    """Usage figures genai-prices could not read from an answer, raised by
    `RequestUsage.extract` (a custom model's helper; Threadline's own providers read usage from
    the SDK's typed answer)."""


class UsageLimitUnavailableWarning(Warning):
    """pydantic-ai's warning for responses without usage while a token limit is set. Threadline
    does not count such responses apart yet, so it does not emit it; it is here for code that
    filters or raises it."""
