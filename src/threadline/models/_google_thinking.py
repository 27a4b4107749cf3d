"""How Gemini models think, by model name, and the unified `thinking` setting as Gemini's
`thinking_config`.

The facts are pydantic-ai 2.62's Gemini profile for the Gemini API (Vertex AI's exceptions are
not modelled). Rules:
- Gemma, Gemini before 2.5 and the 2.5 image models do not think (`thinking` is ignored);
- Gemini 2.5 takes a token budget: True sends `include_thoughts` alone, an effort a budget
  (minimal 128, low 2,048, medium 8,192, and 24,576 above), False a budget of 0, or 128 on the
  Pro models, which cannot stop thinking;
- Gemini 3 and later take a level (MINIMAL < LOW < MEDIUM < HIGH; xhigh and max are HIGH): an
  effort snaps to the nearest level the model accepts (a tie to the cheaper), True sends
  `include_thoughts` alone, and False the least level the model accepts, without thoughts;
- a Pro model (not Flash) always thinks.
"""

from __future__ import annotations

from typing import Any, Literal

from threadline.exceptions import UserError
from threadline.models._base import ThinkingEffort, ThinkingLevel
from threadline.models._profile import ModelProfile

__all__ = ['google_thinking_config', 'google_thinking_keys']

Level = Literal['MINIMAL', 'LOW', 'MEDIUM', 'HIGH']
_SCALE: tuple[Level, ...] = ('MINIMAL', 'LOW', 'MEDIUM', 'HIGH')
_OF_EFFORT: dict[ThinkingEffort, Level] = {
    'minimal': 'MINIMAL',
    'low': 'LOW',
    'medium': 'MEDIUM',
    'high': 'HIGH',
    'xhigh': 'HIGH',
    'max': 'HIGH',
}
_BUDGET: dict[ThinkingEffort, int] = {
    'minimal': 128,
    'low': 2048,
    'medium': 8192,
    'high': 24576,
    'xhigh': 24576,
    'max': 24576,
}
_LEAST_PRO_BUDGET = 128  # Gemini 2.5 Pro refuses a budget of 0
_LEVELS_BY_PREFIX: tuple[tuple[str, frozenset[Level]], ...] = (  # most specific first
    ('gemini-3.1-flash-lite-image', frozenset({'MINIMAL', 'HIGH'})),
    ('gemini-3.1-flash-image', frozenset({'MINIMAL', 'HIGH'})),  # as the Gemini API enforces it
    ('gemini-3.7-flash', frozenset({'LOW', 'MEDIUM', 'HIGH'})),
    ('gemini-3.8-flash', frozenset({'LOW', 'MEDIUM', 'HIGH'})),
    ('gemini-3.1-pro-preview', frozenset({'LOW', 'MEDIUM', 'HIGH'})),
    ('gemini-3-pro-preview', frozenset({'LOW', 'HIGH'})),
    ('gemini-4-argon', frozenset({'LOW', 'MEDIUM', 'HIGH'})),
)


def google_thinking_keys(model_name: str) -> dict[str, object]:
    """The profile keys that say how `model_name` thinks (see the module rules)."""
    is_2_5 = 'gemini-2.5' in model_name
    older = 'gemini-1' in model_name or ('gemini-2.' in model_name and not is_2_5) or model_name == 'gemini-pro'
    thinks = not ('gemma' in model_name or older or 'gemini-2.5-flash-image' in model_name)
    levels = next((found for prefix, found in _LEVELS_BY_PREFIX if model_name.startswith(prefix)), None)
    keys: dict[str, object] = {
        'supports_thinking': thinks,
        'thinking_always_enabled': thinks and 'pro' in model_name and 'flash' not in model_name,
        'google_supports_thinking_level': thinks and not is_2_5,
        'google_supports_minimal_thinking_level': levels is None or 'MINIMAL' in levels,
    }
    if levels is not None:
        keys['google_thinking_levels'] = levels
    return keys


def google_thinking_config(thinking: ThinkingLevel, profile: ModelProfile) -> dict[str, Any]:
    """Gemini's `thinking_config` for `thinking` (see the module rules)."""
    if not profile.get('google_supports_thinking_level', True):
        if thinking is False:
            return {'thinking_budget': _LEAST_PRO_BUDGET if profile.thinking_always_enabled else 0}
        if thinking is True:
            return {'include_thoughts': True}
        return {'include_thoughts': True, 'thinking_budget': _BUDGET[thinking]}
    if thinking is False:
        if profile.get('google_disables_thinking_with_zero_budget', False):
            return {'thinking_budget': 0}
        return {'thinking_level': _nearest('MINIMAL', _accepted(profile))}
    if thinking is True:
        return {'include_thoughts': True}
    return {'include_thoughts': True, 'thinking_level': _nearest(_OF_EFFORT[thinking], _accepted(profile))}


def _accepted(profile: ModelProfile) -> frozenset[str]:
    levels = profile.get('google_thinking_levels')
    if levels is None:
        full = frozenset(_SCALE)
        return full if profile.get('google_supports_minimal_thinking_level', True) else full - {'MINIMAL'}
    if not isinstance(levels, (set, frozenset)) or not levels or not levels <= set(_SCALE):
        raise UserError(f'profile key google_thinking_levels takes a non-empty set of {", ".join(_SCALE)}')
    return frozenset(str(level) for level in levels)


def _nearest(level: Level, accepted: frozenset[str]) -> str:
    """The accepted level nearest `level` on the scale; a tie goes to the cheaper."""
    asked = _SCALE.index(level)
    return min(accepted, key=lambda candidate: (abs(_SCALE.index(candidate) - asked), _SCALE.index(candidate)))
