"""`ModelProfile`: what a model accepts, in both the forms pydantic-ai applications use.

pydantic-ai 2.62's profile is a partial dict (`{'context_window': 128_000}`) merged over the
provider's default; Threadline's is a frozen dataclass read by attribute. A `ModelProfile` is
both: read `profile.context_window` or `profile['context_window']`, spread it with `**`.

Rules for a model's `profile=` (a `ModelProfileSpec`):
- a `ModelProfile` is the profile as given;
- a mapping is merged over the model's default profile, key by key;
- a function is given the default profile and returns the profile (either form);
- a key pydantic-ai's profile has but Threadline does not act on is kept (readable, and merged
  again), and has no effect; a key neither knows is a `UserError` that names it, and a value of
  the wrong type for a field Threadline acts on is one too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TypeAlias

from threadline.exceptions import UserError

__all__ = ['DEFAULT_PROFILE', 'ModelProfile', 'ModelProfileSpec', 'merge_profile', 'resolve_profile']

# pydantic-ai 2.62's profile keys that Threadline keeps but does not act on.
_KEPT_KEYS = frozenset(
    {
        'default_cache_retention',
        'default_structured_output_mode',
        'deferred_tools_require_tool_search',
        'forced_tool_choice_disables_thinking',
        'ignore_streamed_leading_whitespace',
        'json_schema_transformer',
        'mimics_assistant_message_formatting',
        'native_output_requires_schema_in_instructions',
        'prompted_output_template',
        'supported_cache_retentions',
        'supported_document_media_types',
        'supported_native_tools',
        'supports_audio_file_input',
        'supports_audio_input',
        'supports_auto_cache',
        'supports_cache',
        'supports_document_input',
        'supports_forced_tool_choice',
        'supports_forced_tool_choice_with_thinking',
        'supports_image_input',
        'supports_image_output',
        'supports_json_object_output',
        'supports_mid_conversation_effort',
        'supports_request_scoped_system_prompts',
        'supports_text_output',
        'supports_video_input',
        'thinking_tags',
        'tool_addition_mode',
        'tool_additions',
        'tool_call_id_length',
        'tool_deferral_mode',
    }
)

# Provider-specific keys (pydantic-ai's names), kept like those above and read by that provider's
# model through `profile.get(...)`: how its thinking is spelled and which efforts it accepts.
_PROVIDER_KEYS = frozenset(
    {
        'anthropic_disables_thinking_with_between_tools',
        'anthropic_disallows_budget_thinking',
        'anthropic_disallows_sampling_settings',
        'anthropic_disallows_top_effort_when_thinking_disabled',
        'anthropic_supports_adaptive_thinking',
        'anthropic_supports_effort',
        'anthropic_supports_max_effort',
        'anthropic_supports_xhigh_effort',
        'google_disables_thinking_with_zero_budget',
        'google_supports_minimal_thinking_level',
        'google_supports_thinking_level',
        'google_thinking_levels',
        'openai_chat_supports_max_reasoning_effort',
        'openai_reasoning_efforts',
        'openai_responses_supports_max_reasoning_effort',
        'openai_responses_supports_reasoning_context',
        'openai_supports_minimal_reasoning_effort',
        'openai_supports_reasoning',
        'openai_supports_reasoning_effort_none',
    }
)


@dataclass(frozen=True, eq=False)
class ModelProfile(Mapping[str, object]):
    """What a model accepts, declared by its provider; rendering a history for it follows this.

    `supports_inline_system_prompts`: a system message may appear mid-conversation. Where it may
    not, a mid-conversation `SystemPromptPart` is sent as a `<system>`-tagged user part instead.
    `context_window`: how many tokens one request may carry. Left None, the model's window is
    looked up in genai-prices (see `Model.context_window`); set it for custom or local models.
    `supports_thinking`: the model takes the `thinking` setting; `thinking_always_enabled`: it
    thinks and cannot stop (`thinking=False` asks for its least); `thinking_enabled_by_default`:
    it thinks when the request does not say.
    `kept`: pydantic-ai's keys that Threadline does not act on, as they were given.
    """

    supports_inline_system_prompts: bool = False
    supports_tools: bool = True
    supports_json_schema_output: bool = False
    supports_tool_return_schema: bool = False
    """The provider takes a tool's return schema as a field of its own (Gemini)."""
    context_window: int | None = None
    supports_thinking: bool = False
    thinking_always_enabled: bool = False
    thinking_enabled_by_default: bool = False
    kept: Mapping[str, object] = field(default_factory=dict)

    def __getitem__(self, key: str) -> object:
        if key in _FIELDS:
            return getattr(self, key)
        return self.kept[key]

    def __iter__(self) -> Iterator[str]:
        yield from _FIELDS
        yield from self.kept

    def __len__(self) -> int:
        return len(_FIELDS) + len(self.kept)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    def __hash__(self) -> int:
        return hash(tuple((k, repr(v)) for k, v in self.items()))


_FIELDS = tuple(f.name for f in fields(ModelProfile) if f.name != 'kept')
_TYPES: dict[str, tuple[type, ...]] = {name: (bool,) for name in _FIELDS} | {'context_window': (int, type(None))}

DEFAULT_PROFILE = ModelProfile()
"""The profile of a model that declares nothing."""

ModelProfileSpec: TypeAlias = ModelProfile | Mapping[str, object] | Callable[[ModelProfile], Mapping[str, object]]
"""What a model's `profile=` takes (see the module docstring)."""


def merge_profile(base: Mapping[str, object] | None, *overrides: Mapping[str, object] | None) -> ModelProfile:
    """`base` with each override laid over it, key by key (None counts as empty)."""
    merged = base if isinstance(base, ModelProfile) else _from_mapping(DEFAULT_PROFILE, base or {})
    for override in overrides:
        merged = _from_mapping(merged, override or {})
    return merged


def resolve_profile(default: ModelProfile, spec: ModelProfileSpec | None) -> ModelProfile:
    """The profile a model with `default` has when it is given `spec` (see the module docstring)."""
    if spec is None:
        return default
    if isinstance(spec, ModelProfile):
        return spec
    if isinstance(spec, Mapping):
        return _from_mapping(default, spec)
    if callable(spec):
        made = spec(default)
        if isinstance(made, ModelProfile):
            return made
        if isinstance(made, Mapping):
            return _from_mapping(DEFAULT_PROFILE, made)
        raise UserError(f'a profile function must return a ModelProfile or a mapping, not {type(made).__name__}')
    raise UserError(f'profile= takes a ModelProfile, a mapping or a function, not {type(spec).__name__}')


def _from_mapping(base: ModelProfile, changes: Mapping[str, object]) -> ModelProfile:
    ours: dict[str, object] = {}
    kept = dict(base.kept)
    for key, value in changes.items():
        if key in _TYPES:
            if not isinstance(value, _TYPES[key]) or (key == 'context_window' and isinstance(value, bool)):
                raise UserError(f'profile key {key!r} takes {_describe(key)}, not {type(value).__name__}')
            ours[key] = value
        elif key in _KEPT_KEYS or key in _PROVIDER_KEYS:
            kept[key] = value
        else:
            raise UserError(
                f"unknown profile key {key!r}; the keys are: {', '.join(sorted(_TYPES))} (and pydantic-ai's)"
            )
    return replace(base, **ours, kept=kept)  # type: ignore[arg-type]


def _describe(key: str) -> str:
    return 'an int or None' if key == 'context_window' else 'a bool'
