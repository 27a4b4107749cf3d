"""The unified `thinking` setting: checked, and resolved against a model's profile.

Rules (as pydantic-ai 2.62 resolves it before a request):
- `thinking` takes True, False or an effort level (`ThinkingEffort`); anything else is a
  `UserError` naming the setting and the values it takes;
- it applies to a model whose profile says it thinks (`supports_thinking`, or
  `thinking_always_enabled`); for any other model it is ignored, silently, as a tuning knob;
- a `thinking` in the request's settings wins over `ModelRequestParameters.thinking`; without
  one, the parameters' value stands (a caller may set it there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Protocol, TypeAlias, get_args

from threadline.exceptions import UserError
from threadline.models._profile import ModelProfile

__all__ = ['EFFORTS', 'ThinkingEffort', 'ThinkingLevel', 'request_thinks', 'resolve_thinking']

ThinkingEffort: TypeAlias = Literal['minimal', 'low', 'medium', 'high', 'xhigh', 'max']
"""An effort level for a model's thinking (reasoning), least to most."""

ThinkingLevel: TypeAlias = bool | ThinkingEffort
"""The unified `thinking` setting: True (think, at the model's default effort), False (do not
think, or as little as the model allows), or an effort level (snapped to the nearest the model
accepts)."""

EFFORTS: tuple[ThinkingEffort, ...] = get_args(ThinkingEffort)
"""The effort levels, least to most."""


class _Parameters(Protocol):
    """What is read of `ModelRequestParameters` (typed structurally: `_base` imports this module)."""

    @property
    def thinking(self) -> ThinkingLevel | None: ...


def resolve_thinking(
    settings: Mapping[str, object] | None, params: _Parameters, profile: ModelProfile
) -> ThinkingLevel | None:
    """The `thinking` in effect for a request (see the module rules)."""
    if not settings or 'thinking' not in settings:
        return params.thinking
    value: object = settings['thinking']
    if not isinstance(value, bool) and value not in EFFORTS:
        raise UserError(
            f'model setting `thinking` takes True, False or one of {", ".join(map(repr, EFFORTS))}, '
            f'not {type(value).__name__} {value!r}'[:300]
        )
    if profile.supports_thinking or profile.thinking_always_enabled:
        return value
    return params.thinking


def request_thinks(thinking: ThinkingLevel | None, profile: ModelProfile) -> bool:
    """Whether a request with `thinking` in effect thinks: asked to, or by the model's default
    (False on a model that cannot stop still thinks, at its least)."""
    if thinking is None:
        return profile.thinking_always_enabled or profile.thinking_enabled_by_default
    return thinking is not False or profile.thinking_always_enabled
