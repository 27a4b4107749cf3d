"""Token estimates for the testing models, so runs without a provider still report usage."""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from ..messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RequestUsage,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from ..messages._codec import enc_hook

__all__ = ['estimate_usage']

_SPLIT = re.compile(r'[\s",.:]+')


def _tokens(text: str) -> int:
    return len(_SPLIT.split(text.strip()))


def _content_tokens(content: object) -> int:
    if isinstance(content, str):
        return _tokens(content)
    if isinstance(content, list):
        return sum(_tokens(item) for item in content if isinstance(item, str))
    return _tokens(msgspec.json.encode(content, enc_hook=enc_hook).decode()) if content is not None else 0


def estimate_usage(messages: Sequence[ModelMessage], response: ModelResponse) -> RequestUsage:
    """50 tokens of overhead plus a word count of prompt text; output counts text, thinking and calls."""
    input_tokens = 50
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, (SystemPromptPart, UserPromptPart, ToolReturnPart)):
                    input_tokens += _content_tokens(part.content)
    output_tokens = 0
    for response_part in response.parts:
        if isinstance(response_part, (TextPart, ThinkingPart)):
            output_tokens += _tokens(response_part.content)
        elif isinstance(response_part, ToolCallPart):
            output_tokens += 1 + _tokens(response_part.args_as_json_str())
    return RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens)
