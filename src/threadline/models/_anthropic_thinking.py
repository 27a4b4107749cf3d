"""How Claude models think, by model name, and the unified `thinking` setting as Anthropic's
`thinking` object and `output_config.effort`.

The facts are pydantic-ai 2.62's Anthropic profile; the rules are how its `AnthropicModel` sends
them:
- every Claude model takes `thinking`. Adaptive models (Sonnet 4.6+, Opus 4.6+, Haiku 5.5, the
  5-series) get `{'type': 'adaptive'}`; the others a budget, `{'type': 'enabled',
  'budget_tokens': N}` (True and medium 10,000; minimal 1,024; low 2,048; high 16,384; xhigh
  and max 32,768);
- `thinking=False` sends nothing, except: a model that cannot stop thinking gets `adaptive`
  (at effort `low` where it takes an effort, else nothing at all); Sonnet 5.5 gets
  `{'type': 'between_tools'}`; a model that thinks by default gets `{'type': 'disabled'}`;
- an effort level also goes as `output_config.effort` on models that take one: minimal and low
  are `low`; xhigh is `xhigh` where the model takes it, else `max`; `max` falls back to `xhigh`
  or `high` where the model does not take it;
- `anthropic_thinking` and `anthropic_effort` are sent as given and win over `thinking`; a budget
  on a model that refuses budgets is a `UserError`, and so is effort `xhigh`/`max` with thinking
  turned off on a model that caps effort at `high` then;
- without `max_tokens`, a budget leaves 4,096 tokens for the answer above it (the API refuses a
  `max_tokens` that is not above the budget);
- a request that thinks does not force a tool call (extended thinking refuses it; adaptive
  thinking would answer without thinking), and neither does one to a model that refuses forcing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from threadline.exceptions import UserError
from threadline.models._base import ModelSettings, ThinkingEffort, ThinkingLevel
from threadline.models._profile import ModelProfile

__all__ = [
    'AnthropicEffort',
    'AnthropicModelSettings',
    'anthropic_thinking_keys',
    'check_thinking',
    'effort_of',
    'max_tokens_for',
    'thinking_of',
    'thinking_type',
]

AnthropicEffort = Literal['low', 'medium', 'high', 'xhigh', 'max']
"""The values Anthropic takes at `output_config.effort`."""


class AnthropicModelSettings(ModelSettings, total=False):
    """Settings of Anthropic's models beside the common ones."""

    anthropic_thinking: dict[str, Any]
    """Anthropic's `thinking` object (`{'type': 'adaptive'}`, `{'type': 'enabled', 'budget_tokens':
    N}`, `{'type': 'disabled'}`), sent as given: it wins over the unified `thinking`."""
    anthropic_effort: AnthropicEffort | None
    """`output_config.effort`, sent as given: it wins over the effort `thinking` maps to."""
    anthropic_cache: bool | Literal['5m', '1h']
    """The API's automatic cache breakpoint, moved forward as the conversation grows."""
    anthropic_cache_instructions: bool | Literal['5m', '1h']
    """A cache breakpoint after the instructions (the last `system` block)."""
    anthropic_cache_tool_definitions: bool | Literal['5m', '1h']
    """A cache breakpoint on the last tool definition."""
    anthropic_cache_messages: bool | Literal['5m', '1h']
    """A cache breakpoint on the conversation's last block (not with `anthropic_cache`)."""


_BUDGET: dict[ThinkingLevel, int] = {
    True: 10_000,
    'minimal': 1024,
    'low': 2048,
    'medium': 10_000,
    'high': 16_384,
    'xhigh': 32_768,
    'max': 32_768,
}
_EFFORT: dict[ThinkingEffort, AnthropicEffort] = {
    'minimal': 'low',
    'low': 'low',
    'medium': 'medium',
    'high': 'high',
    'xhigh': 'max',
    'max': 'max',
}
_ROOM_AFTER_BUDGET = 4096

_FIVE = ('claude-fable-5', 'claude-mythos-5')
_NEWEST = (*_FIVE, 'claude-opus-4-7', 'claude-opus-4-8', 'claude-opus-5', 'claude-sonnet-5', 'claude-haiku-5-5')
_ADAPTIVE = (*_FIVE, 'claude-mythos-preview', 'claude-sonnet-4-6', 'claude-sonnet-5', 'claude-opus-4-6', *_NEWEST[2:])
_EFFORT_MODELS = (*_FIVE, 'claude-opus-4-5', 'claude-opus-4-6', 'claude-sonnet-4-6', *_NEWEST[2:])
_BY_DEFAULT = (*_FIVE, 'claude-mythos-preview', 'claude-opus-5', 'claude-sonnet-5', 'claude-haiku-5-5')
_ALWAYS = (*_FIVE, 'claude-mythos-preview', 'claude-opus-5-5')
_NO_FORCING = ('claude-fable-5-1', 'claude-mythos-5-1', 'claude-opus-5-5', 'claude-sonnet-5-5')


def anthropic_thinking_keys(model_name: str) -> dict[str, object]:
    """The profile keys that say how `model_name` thinks (see the module rules)."""
    starts = model_name.startswith
    opus_5_caps = starts('claude-opus-5') and not starts('claude-opus-5-5')
    return {
        'supports_thinking': True,
        'thinking_always_enabled': starts(_ALWAYS),
        'thinking_enabled_by_default': starts(_BY_DEFAULT),
        'anthropic_supports_adaptive_thinking': starts(_ADAPTIVE),
        'anthropic_supports_effort': starts(_EFFORT_MODELS),
        'anthropic_supports_xhigh_effort': starts(_NEWEST),
        'anthropic_supports_max_effort': not starts('claude-opus-4-5'),
        'anthropic_disallows_budget_thinking': starts(_NEWEST),
        'anthropic_disallows_sampling_settings': starts(_NEWEST),
        'anthropic_disallows_top_effort_when_thinking_disabled': opus_5_caps
        or starts(('claude-sonnet-5-5', 'claude-haiku-5-5')),
        'anthropic_disables_thinking_with_between_tools': starts('claude-sonnet-5-5'),
        'supports_forced_tool_choice': not starts(_NO_FORCING),
        # A forced tool call is answered without thinking (extended thinking refuses it).
        'forced_tool_choice_disables_thinking': True,
    }


def thinking_of(
    settings: Mapping[str, Any], thinking: ThinkingLevel | None, profile: ModelProfile
) -> dict[str, Any] | None:
    """The `thinking` object to send (None: leave it out)."""
    if given := settings.get('anthropic_thinking'):
        return dict(given)
    if thinking is None:
        return None
    if thinking is False:
        if profile.thinking_always_enabled:
            return {'type': 'adaptive'} if profile.get('anthropic_supports_effort', False) else None
        if profile.get('anthropic_disables_thinking_with_between_tools', False):
            return {'type': 'between_tools'}
        return {'type': 'disabled'} if profile.thinking_enabled_by_default else None
    if profile.get('anthropic_supports_adaptive_thinking', False):
        return {'type': 'adaptive'}
    return {'type': 'enabled', 'budget_tokens': _BUDGET[thinking]}


def effort_of(settings: Mapping[str, Any], thinking: ThinkingLevel | None, profile: ModelProfile) -> str | None:
    """The `output_config.effort` to send (None: leave it out)."""
    effort: str | None = settings.get('anthropic_effort')
    if effort is not None or not profile.get('anthropic_supports_effort', False):
        return effort
    if thinking is False and profile.thinking_always_enabled:
        return 'low'  # the least a model that cannot stop thinking accepts
    if not isinstance(thinking, str):
        return None
    xhigh = bool(profile.get('anthropic_supports_xhigh_effort', False))
    if thinking == 'xhigh' and xhigh:
        return 'xhigh'
    mapped = _EFFORT[thinking]
    if mapped == 'max' and not profile.get('anthropic_supports_max_effort', True):
        return 'xhigh' if xhigh else 'high'
    return mapped


def check_thinking(model_name: str, sent: dict[str, Any] | None, effort: str | None, profile: ModelProfile) -> None:
    """Refuse what the model would answer with a 400 (see the module rules)."""
    if sent is not None and sent.get('type') == 'enabled' and profile.get('anthropic_disallows_budget_thinking', False):
        raise UserError(
            f"{model_name!r} does not support `anthropic_thinking={{'type': 'enabled', 'budget_tokens': ...}}`. "
            "Use `anthropic_thinking={'type': 'adaptive'}` and `anthropic_effort=...` instead."
        )
    turned_off = sent is not None and sent.get('type') in ('disabled', 'between_tools')
    if (
        effort in ('xhigh', 'max')
        and turned_off
        and profile.get('anthropic_disallows_top_effort_when_thinking_disabled')
    ):
        raise UserError(
            f'Model {model_name!r} does not support `anthropic_effort={effort!r}` while thinking is turned off '
            f"(`thinking={sent!r}`): use an effort of 'high' or less, or turn thinking on."
        )


def thinking_type(
    settings: Mapping[str, Any], thinking: ThinkingLevel | None, profile: ModelProfile
) -> Literal['enabled', 'adaptive'] | None:
    """How the request thinks: by budget, adaptively, or not at all (None; `between_tools`
    does not think before it answers)."""
    if given := settings.get('anthropic_thinking'):
        kind = given.get('type')
        return kind if kind in ('enabled', 'adaptive') else None
    if thinking:
        return 'adaptive' if profile.get('anthropic_supports_adaptive_thinking', False) else 'enabled'
    if thinking is False and not profile.thinking_always_enabled:
        return None
    return 'adaptive' if profile.thinking_enabled_by_default else None


def max_tokens_for(settings: Mapping[str, Any], sent: dict[str, Any] | None, default: int) -> int:
    """`max_tokens` as given, else `default` raised to leave room for the answer above a budget."""
    if 'max_tokens' in settings:
        given: int = settings['max_tokens']
        return given
    budget = sent.get('budget_tokens') if sent is not None and sent.get('type') == 'enabled' else None
    return max(default, (budget if isinstance(budget, int) else 0) + _ROOM_AFTER_BUDGET)
