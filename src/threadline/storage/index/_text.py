"""What the full-text index sees of a message: user text, assistant text, tool names, arguments
and results (never binary data, never application metadata)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from threadline.messages import (
    ModelMessage,
    ModelRequest,
    RetryFeedbackPart,
    RetryPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.messages.wire import decode_messages

__all__ = ['message_text', 'role_and_time', 'role_of', 'time_of', 'title_of']


def _json_text(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, msgspec.EncodeError):
        return ''


def message_text(message: ModelMessage) -> str:
    """Searchable text of one message. A system prompt is not: it is the agent's, not the
    conversation's, and a hit on it would be shown as the user's message."""
    out: list[Any] = []
    parts: list[Any] = list(message.parts)
    for part in parts:
        kind = type(part)
        if kind is UserPromptPart:
            content = part.content
            if isinstance(content, str):
                out.append(content)
            else:
                out.extend(i if isinstance(i, str) else i.content for i in content if isinstance(i, (str, TextContent)))
        elif kind is TextPart or kind is ThinkingPart:
            out.append(part.content)
        elif kind is ToolCallPart:
            out.append(part.tool_name)
            out.append(_json_text(part.args))
        elif kind is ToolReturnPart:
            out.append(part.tool_name)
            out.append(_json_text(part.content))
        elif kind is RetryFeedbackPart or kind is RetryPromptPart:
            out.append(_json_text(part.content))
    # NUL cannot live in a PostgreSQL text column; the stored message keeps it, the index does not.
    return '\n'.join(t for t in out if isinstance(t, str) and t).replace('\x00', ' ')


def title_of(messages: list[ModelMessage]) -> str | None:
    """The first user prompt, shortened: how a person recognises a conversation in a list."""
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    text = (
                        part.content
                        if isinstance(part.content, str)
                        else ' '.join(i for i in part.content if isinstance(i, str))
                    )
                    text = ' '.join(text.replace('\x00', ' ').split())
                    if text:
                        return text if len(text) <= 80 else text[:77] + '...'
    return None


def role_of(message: ModelMessage) -> str:
    """Who a message speaks for, as a search hit names it: 'assistant' (a response), 'tool' (a
    request answering tool calls), 'user' (a request with a user prompt), else 'system'."""
    if not isinstance(message, ModelRequest):
        return 'assistant'
    kinds = {type(p) for p in message.parts}
    if ToolReturnPart in kinds or (
        RetryPromptPart in kinds and any(getattr(p, 'tool_name', None) for p in message.parts)
    ):
        return 'tool'
    if UserPromptPart in kinds or RetryFeedbackPart in kinds or RetryPromptPart in kinds:
        return 'user'
    return 'system'


def time_of(message: ModelMessage) -> datetime | None:
    """When a message was made: its own timestamp, else its first part's."""
    stamps = (getattr(p, 'timestamp', None) for p in message.parts)
    return message.timestamp or next((t for t in stamps if t is not None), None)


def role_and_time(body: str | bytes) -> tuple[str, datetime | None]:
    """The role and time of one stored message (its wire JSON)."""
    raw = body.encode() if isinstance(body, str) else body
    [message] = decode_messages(b'[' + raw + b']')
    return role_of(message), time_of(message)
