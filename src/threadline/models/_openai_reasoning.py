"""How OpenAI's models reason, by model name, and the unified `thinking` setting as OpenAI's
`reasoning_effort` (Chat Completions) or `reasoning.effort` (Responses).

The facts per model family are pydantic-ai 2.62's (its OpenAI profile), which it verified against
the live API; the first matching name prefix wins, so a narrower prefix comes before a broader one.
Rules for the effort sent:
- a model whose accepted efforts are pinned gets the lowest accepted effort at or above the one
  asked for (else its highest); `thinking=False` gets `'none'` where accepted, else its lowest;
- an unpinned model gets the effort named (True is `'medium'`, `'max'` is `'xhigh'` unless the API
  takes `'max'` for it), `'minimal'` becomes `'low'` where minimal is refused, and `thinking=False`
  on a model that cannot stop reasoning sends nothing (it keeps its default);
- an explicit `openai_reasoning_effort` setting is sent as given, and wins over `thinking`;
- while a reasoning model reasons, the sampling settings (temperature, top_p, penalties,
  logit_bias) are refused by the API: they are dropped, with a `UserWarning` naming them.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal, get_args

from threadline.messages.wire import JSONObject
from threadline.models._base import ModelSettings, ThinkingLevel
from threadline.models._profile import ModelProfile
from threadline.models._thinking import request_thinks

__all__ = [
    'SAMPLING_SETTINGS',
    'OpenAIChatModelSettings',
    'openai_effort',
    'openai_reasoning_keys',
    'request_effort',
    'explicit_effort',
    'responses_reasoning',
    'without_sampling_while_reasoning',
]

Effort = Literal['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']


class OpenAIChatModelSettings(ModelSettings, total=False):
    """Settings of OpenAI's models beside the common ones."""

    openai_reasoning_effort: Effort
    """The reasoning effort, sent as given (it wins over the unified `thinking`)."""


_ORDER: tuple[Effort, ...] = get_args(Effort)
_NAMED: dict[ThinkingLevel, Effort] = {
    True: 'medium',
    False: 'none',
    'minimal': 'minimal',
    'low': 'low',
    'medium': 'medium',
    'high': 'high',
    'xhigh': 'xhigh',
    'max': 'xhigh',
}
SAMPLING_SETTINGS = ('temperature', 'top_p', 'presence_penalty', 'frequency_penalty', 'logit_bias')
"""The settings OpenAI refuses while a model reasons."""


@dataclass(frozen=True)
class _Family:
    on_by_default: bool  # reasons when no effort is sent
    can_stop: bool  # accepts effort 'none'
    all_turns: bool = False  # the Responses API takes reasoning.context='all_turns'
    efforts: frozenset[Effort] | None = None  # pinned accepted efforts, or None

    @property
    def reasons(self) -> bool:
        return self.on_by_default or self.can_stop


_NONE = _Family(on_by_default=False, can_stop=False)
_OPT_IN = _Family(on_by_default=False, can_stop=True)
_O_SERIES = _Family(on_by_default=True, can_stop=False, efforts=frozenset({'low', 'medium', 'high'}))
_CHAT_LATEST = _Family(on_by_default=True, can_stop=False, efforts=frozenset({'medium'}))
_PRO: frozenset[Effort] = frozenset({'medium', 'high', 'xhigh'})
_TOP: frozenset[Effort] = frozenset({'low', 'medium', 'high', 'xhigh', 'max'})
_FAMILIES: tuple[tuple[str, _Family], ...] = (
    ('gpt-6-astra', _Family(on_by_default=True, can_stop=False, all_turns=True, efforts=_TOP)),
    ('gpt-6.1-sol', _Family(on_by_default=True, can_stop=False, all_turns=True, efforts=_TOP)),
    ('gpt-6-sol', _Family(on_by_default=True, can_stop=True, all_turns=True)),
    ('gpt-6-luna', _Family(on_by_default=True, can_stop=True, all_turns=True)),
    ('gpt-5.6', _Family(on_by_default=True, can_stop=True, all_turns=True)),
    ('gpt-5.5-pro', _Family(on_by_default=True, can_stop=False, all_turns=True, efforts=_PRO)),
    ('gpt-5.5', _Family(on_by_default=True, can_stop=True, all_turns=True)),
    ('gpt-5.4-pro', _Family(on_by_default=True, can_stop=False, all_turns=True, efforts=_PRO)),
    ('gpt-5.4', _Family(on_by_default=False, can_stop=True, all_turns=True)),
    ('gpt-5.3-chat', _CHAT_LATEST),
    ('gpt-5.3', _OPT_IN),
    ('gpt-5.2-pro', _Family(on_by_default=True, can_stop=False, efforts=_PRO)),
    ('gpt-5.2-chat', _CHAT_LATEST),
    ('gpt-5.2', _OPT_IN),
    ('gpt-5.1-codex', _Family(on_by_default=True, can_stop=False)),
    ('gpt-5.1-chat', _CHAT_LATEST),
    ('gpt-5.1', _OPT_IN),
    ('gpt-5-chat', _NONE),
    ('gpt-5-pro', _Family(on_by_default=True, can_stop=False, efforts=frozenset({'high'}))),
    ('gpt-5-codex', _Family(on_by_default=True, can_stop=False)),
    ('gpt-5', _Family(on_by_default=True, can_stop=False, efforts=frozenset({'minimal', 'low', 'medium', 'high'}))),
    ('o1', _O_SERIES),
    ('o3', _O_SERIES),
    ('o4', _O_SERIES),
)
# Families that take effort 'max' on the Responses API (and refuse 'minimal' when unpinned).
_NEWEST = ('gpt-5.6', 'gpt-6-astra', 'gpt-6-sol', 'gpt-6-luna', 'gpt-6.1-sol')


def _family(model_name: str) -> _Family:
    return next((family for prefix, family in _FAMILIES if model_name.startswith(prefix)), _NONE)


def openai_reasoning_keys(model_name: str) -> dict[str, object]:
    """The profile keys that say how `model_name` reasons, on OpenAI's own API."""
    family = _family(model_name)
    keys: dict[str, object] = {
        'supports_thinking': family.reasons,
        'thinking_always_enabled': family.on_by_default and not family.can_stop,
        'thinking_enabled_by_default': family.on_by_default,
        'openai_supports_reasoning': family.reasons,
        'openai_supports_reasoning_effort_none': family.can_stop,
        'openai_responses_supports_reasoning_context': family.all_turns,
        'openai_responses_supports_max_reasoning_effort': model_name.startswith(_NEWEST),
        'openai_supports_minimal_reasoning_effort': (
            'minimal' in family.efforts if family.efforts is not None else not model_name.startswith(_NEWEST)
        ),
    }
    if family.efforts is not None:
        keys['openai_reasoning_efforts'] = family.efforts
    return keys


def openai_effort(thinking: ThinkingLevel, profile: ModelProfile, *, takes_max: bool) -> Effort | None:
    """The effort to send for `thinking` (see the module rules), or None to send none."""
    pinned = profile.get('openai_reasoning_efforts')
    if not isinstance(pinned, (set, frozenset)):
        if thinking is False and profile.thinking_always_enabled:
            return None
        if thinking == 'minimal' and not profile.get('openai_supports_minimal_reasoning_effort', True):
            return 'low'
        return 'max' if thinking == 'max' and takes_max else _NAMED[thinking]
    accepted = sorted((e for e in pinned if e != 'max' or takes_max), key=_ORDER.index)
    if thinking is False:
        return accepted[0] if accepted else None
    asked = _ORDER.index('max' if thinking == 'max' and takes_max else _NAMED[thinking])
    active = [e for e in accepted if e != 'none']
    return next((e for e in active if _ORDER.index(e) >= asked), active[-1] if active else None)


def without_sampling_while_reasoning(
    settings: ModelSettings, thinking: ThinkingLevel | None, profile: ModelProfile
) -> ModelSettings:
    """`settings` without the sampling settings when this request reasons (see the module rules)."""
    if not profile.get('openai_supports_reasoning', False):
        return settings
    explicit = explicit_effort(settings)
    reasons = explicit != 'none' if explicit is not None else request_thinks(thinking, profile)
    can_stop = profile.get('openai_supports_reasoning_effort_none', False)
    pinned = profile.get('openai_reasoning_efforts')
    if isinstance(pinned, (set, frozenset)):
        can_stop = 'none' in pinned
    if can_stop and not reasons:
        return settings
    dropped = [key for key in SAMPLING_SETTINGS if key in settings]
    if not dropped:
        return settings
    warnings.warn(
        f'Sampling parameters {dropped} are not supported when reasoning is enabled. These settings will be ignored.',
        UserWarning,
        stacklevel=2,
    )
    return {key: value for key, value in settings.items() if key not in dropped}  # type: ignore[return-value]


def explicit_effort(settings: ModelSettings | None) -> str | None:
    """The `openai_reasoning_effort` setting, if given."""
    value = (settings or {}).get('openai_reasoning_effort')
    return value if isinstance(value, str) and value else None


def request_effort(
    thinking: ThinkingLevel | None, profile: ModelProfile, settings: ModelSettings | None, *, api: str
) -> str | None:
    """The effort a request sends on `api` ('chat' or 'responses', which differ in taking
    'max'): an explicit `openai_reasoning_effort`, else the one `thinking` maps to, else None."""
    if (explicit := explicit_effort(settings)) is not None:
        return explicit
    if thinking is None:
        return None
    takes_max = profile.get(f'openai_{api}_supports_max_reasoning_effort', False) is True
    return openai_effort(thinking, profile, takes_max=takes_max)


def responses_reasoning(
    thinking: ThinkingLevel | None, profile: ModelProfile, settings: ModelSettings | None = None
) -> JSONObject:
    """The Responses API's `reasoning` object for a request (empty: send none): the effort for
    `thinking`, and `context='all_turns'` on the families that keep earlier turns' reasoning, so
    the reasoning sent back from earlier turns is read (as pydantic-ai sends it by default)."""
    reasoning: JSONObject = {}
    if (effort := request_effort(thinking, profile, settings, api='responses')) is not None:
        reasoning['effort'] = effort
    if profile.get('openai_responses_supports_reasoning_context', False):
        reasoning['context'] = 'all_turns'
    return reasoning
