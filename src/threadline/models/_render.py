"""Rendering a stored history into what a model receives, according to the model's profile.

Rules, applied to a copy (stored history is never changed):

- The standing system prompt is the run of `SystemPromptPart`s at the head of the first request,
  up to the first other part or the first `scope='request'` part. Every other `SystemPromptPart`
  is mid-conversation: it stays at its position, as a system part where the profile supports
  inline system prompts, else as a user part whose text is wrapped in `<system>` tags, with any
  `</system` inside escaped so the text cannot close the tag early.
- Feedback parts become what the model can read: a `RetryFeedbackPart` with one of the fixed
  "no output" texts stays in the system voice; other feedback becomes a user part that says it is
  automated feedback; a legacy `RetryPromptPart` for a tool becomes a `retried` tool return.
- A `CompactionPart` in a request (a summary the application wrote in place of earlier turns)
  becomes user text: the summary inside `<conversation_summary>` tags, behind a line saying a
  separate model wrote it and that it is context, not instructions, with any framing tag inside
  it neutralized (see `_framing`). It is never sent as a system prompt.
- Opaque parts and content (kinds this version does not know) are skipped; their kinds are
  returned so the run can warn once. A realtime session's `speech` part is sent as its
  transcript (see `_speech`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from threadline.messages import (
    CompactionPart,
    FilePart,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    NativeToolCallPart,
    NativeToolReturnPart,
    OpaqueContent,
    OpaquePart,
    RetryFeedbackPart,
    RetryInfo,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolAvailabilityDeltaPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.messages.framing import CONVERSATION_SUMMARY_PROVENANCE, fenced_feedback, frame
from threadline.models._base import ModelProfile
from threadline.models._speech import SPEECH, assistant_speech, user_speech

__all__ = [
    'feedback_text',
    'render_history',
    'render_into',
    'standing_prompt_count',
    'wrap_system_text',
]

_CLOSING_TAG = re.compile(r'</(system)', re.IGNORECASE)


def wrap_system_text(text: str) -> str:
    """`text` inside `<system>` tags, with anything that could close the tag escaped."""
    escaped = _CLOSING_TAG.sub(r'&lt;/\1', text)
    return f'<system>{escaped}</system>'


def standing_prompt_count(messages: Sequence[ModelMessage]) -> int:
    """How many leading parts of the first request form the standing system prompt."""
    for message in messages:
        if isinstance(message, ModelRequest):
            count = 0
            for part in message.parts:
                if not isinstance(part, SystemPromptPart) or part.scope == 'request':
                    break
                count += 1
            return count
    return 0


def feedback_text(content: Any, cause: str) -> str:
    """Retry feedback as the model reads it in the user voice: the automated-feedback lead, then
    the feedback (or the validation errors as JSON) fenced in a tag naming what it is, its body
    neutralized so the model's words it quotes cannot end the fence (`framing.fenced_feedback`)."""
    return fenced_feedback(content, cause)


def _render_request_part(
    part: ModelRequestPart, standing: bool, profile: ModelProfile, skipped: set[str]
) -> ModelRequestPart:
    if isinstance(part, SystemPromptPart):
        if standing or profile.supports_inline_system_prompts:
            return part
        return UserPromptPart(wrap_system_text(part.content), timestamp=part.timestamp)
    if isinstance(part, RetryFeedbackPart):
        text = part.model_response()
        if part.in_framework_voice:  # the framework's fixed words: its voice (`text` is the content)
            return _render_request_part(SystemPromptPart(text, timestamp=part.timestamp), False, profile, skipped)
        return UserPromptPart(text, timestamp=part.timestamp)
    if isinstance(part, RetryPromptPart):
        if part.tool_name is not None:
            cause = 'validation_error' if isinstance(part.content, list) else 'model_retry'
            return ToolReturnPart(
                part.tool_name,
                part.content,
                part.tool_call_id,
                timestamp=part.timestamp,
                outcome='retried',
                retry=RetryInfo(cause) if cause == 'validation_error' else None,
            )
        cause = 'validation_error' if isinstance(part.content, list) else 'model_retry'
        return UserPromptPart(feedback_text(part.content, cause), timestamp=part.timestamp)
    if isinstance(part, CompactionPart):
        body = f'\n{CONVERSATION_SUMMARY_PROVENANCE}\n\n{part.content or ""}\n'
        return UserPromptPart(frame('conversation_summary', body))
    if isinstance(part, UserPromptPart) and not isinstance(part.content, str):
        kept = [item for item in part.content if not isinstance(item, OpaqueContent)]
        if len(kept) != len(part.content):
            skipped.update(item.kind for item in part.content if isinstance(item, OpaqueContent))
            return replace(part, content=kept)
    return part


# Parts that rendering never changes, by exact type (a subclass takes the full path). A history is
# rendered before every model request, so the common message is recognised without building a copy.
_AS_IS_IN_RESPONSE = frozenset(
    {TextPart, ThinkingPart, ToolCallPart, NativeToolCallPart, NativeToolReturnPart, FilePart}
)


def _request_as_is(parts: Sequence[Any]) -> bool:
    """True when no part of a request (other than the first) can change in rendering."""
    for part in parts:
        part_t = type(part)
        if part_t is ToolReturnPart or part_t is ToolAvailabilityDeltaPart:
            continue
        if part_t is not UserPromptPart:
            return False
        content = part.content
        if type(content) is not str and any(isinstance(item, OpaqueContent) for item in content):
            return False
    return True


def render_history(messages: Sequence[ModelMessage], profile: ModelProfile) -> tuple[list[ModelMessage], set[str]]:
    """The history as `profile`'s model should receive it, and the opaque kinds that were skipped."""
    skipped: set[str] = set()
    out: list[ModelMessage] = []
    render_into(out, messages, profile, skipped, first_request_seen=False)
    return out, skipped


def render_into(
    out: list[ModelMessage],
    messages: Sequence[ModelMessage],
    profile: ModelProfile,
    skipped: set[str],
    *,
    first_request_seen: bool,
) -> bool:
    """Render `messages` onto `out`, one message out per message in (the continuation of a
    rendering that has seen a request already when `first_request_seen`); returns whether a
    request has been seen after them. The standing system prompt is the first request's."""
    append = out.append
    standing = 0 if first_request_seen else standing_prompt_count(messages)
    for message in messages:
        kind = type(message)
        if kind is ModelResponse:
            if _AS_IS_IN_RESPONSE.issuperset(map(type, message.parts)):
                append(message)
                continue
        elif kind is ModelRequest and first_request_seen and _request_as_is(message.parts):
            append(message)
            continue
        append(_render_message(message, not first_request_seen, standing, profile, skipped))
        first_request_seen = first_request_seen or isinstance(message, ModelRequest)
    return first_request_seen


def _render_message(
    message: ModelMessage, first: bool, standing: int, profile: ModelProfile, skipped: set[str]
) -> ModelMessage:
    """`message` as sent (itself when nothing changes); `first`: no request came before it."""
    if isinstance(message, ModelRequest):
        parts: list[ModelRequestPart] = []
        changed = False
        for index, part in enumerate(message.parts):
            if isinstance(part, OpaquePart):
                changed = True
                if part.part_kind == SPEECH:
                    parts.extend(p for p in [user_speech(part)] if p is not None)
                else:
                    skipped.add(part.part_kind)
                continue
            rendered = _render_request_part(part, first and index < standing, profile, skipped)
            changed = changed or rendered is not part
            parts.append(rendered)
        return replace(message, parts=parts) if changed else message
    if not any(isinstance(part, OpaquePart) for part in message.parts):
        return message
    kept: list[ModelResponsePart] = []
    for at, answer_part in enumerate(message.parts):
        if not isinstance(answer_part, OpaquePart):
            kept.append(answer_part)
        elif answer_part.part_kind == SPEECH:
            kept.extend(p for p in [assistant_speech(message, at)] if p is not None)
        else:
            skipped.add(answer_part.part_kind)
    return replace(message, parts=kept)
