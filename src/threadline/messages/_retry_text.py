"""Retry feedback as the model reads it: `RetryFeedbackPart.model_response()`,
`RetryPromptPart.model_response()`, and what the renderers send.

Rules (pydantic-ai 2.62's, checked against it):
- Feedback goes to the model in the user voice, after one line saying the application, not the
  user, is speaking, fenced in `<validation_errors>` (validation errors) or `<retry_feedback>`
  (a `ModelRetry` message). The fence's body is neutralized (`framing.frame`): feedback carries
  the model's own words (an invented key, an interpolated value), which must not close the fence
  or open a `<system>` block.
- Only `no_output` feedback whose text is one the agent loop writes ('Please return text.', ...)
  speaks in the framework's voice and goes unfenced: the cause alone is a claim any code building
  the part can make.
- Validation errors go as JSON without `ctx` (a validator's context is the application's data, not
  something the model must fix), and the whole value that failed is carried once: a later
  root-level error with the same `input` drops it (a large output times the error count could fill
  the context window).
- The legacy `RetryPromptPart` reads as it did: its text (led by 'Validation feedback:' when it
  answers no tool call) or 'N validation error(s):' with the errors as indented JSON, then 'Fix the
  errors and try again.'.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from threadline.messages._encode import jsonable
from threadline.messages.framing import fenced_feedback

__all__ = [
    'NO_OUTPUT_TEXTS',
    'feedback_reply',
    'retry_prompt_text',
    'speaks_for_framework',
]

_ALTERNATIVES: tuple[tuple[str, ...], ...] = (
    ('return text',),
    ('include your response in a tool call', 'call a tool'),
    ('return an image',),
)


def _no_output_texts() -> frozenset[str]:
    """Every 'Please ... or ....' text the agent loop can write, from what it may ask for."""
    combos: list[tuple[str, ...]] = [()]
    for slot in _ALTERNATIVES:
        combos = [*combos, *[(*chosen, choice) for chosen in combos for choice in slot]]
    return frozenset(f'Please {" or ".join(chosen)}.' for chosen in combos)


NO_OUTPUT_TEXTS = _no_output_texts()
"""The `no_output` feedback texts that are the framework's own words (sent in its voice)."""


def speaks_for_framework(content: object, cause: str) -> bool:
    """Whether feedback is the framework's fixed words (sent in its voice, unfenced)."""
    return cause == 'no_output' and isinstance(content, str) and content in NO_OUTPUT_TEXTS


def feedback_reply(content: str | Sequence[Any], cause: str) -> str:
    """`RetryFeedbackPart.model_response()`: the framework's fixed words as they are, anything
    else fenced in the user voice."""
    if speaks_for_framework(content, cause):
        return content  # type: ignore[return-value]  # a str, as speaks_for_framework checked
    return fenced_feedback(content, cause)


def retry_prompt_text(content: str | Sequence[Any], tool_name: str | None) -> str:
    """`RetryPromptPart.model_response()`: the legacy part's text."""
    if isinstance(content, str):
        description = content if tool_name is not None else f'Validation feedback:\n{content}'
    else:
        errors = jsonable(list(content))
        for detail in errors:
            if isinstance(detail, dict):
                detail.pop('ctx', None)
                # Output retries (no tool): the output is in the context already, a top-level input repeats it.
                if tool_name is None and len(detail.get('loc', ())) <= 1:
                    detail.pop('input', None)
        plural = 's' if len(errors) != 1 else ''
        dumped = json.dumps(errors, indent=2, ensure_ascii=False)
        description = f'{len(errors)} validation error{plural}:\n```json\n{dumped}\n```'
    return f'{description}\n\nFix the errors and try again.'
