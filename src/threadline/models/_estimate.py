"""Token estimates for the testing models, so runs without a provider still report usage.

The rules follow the reference's estimator, so a test that asserts usage gives the same numbers
after the import swap:
- a request costs 50 tokens of overhead plus the words of its sendable text: system and user
  prompts (text items; inline binary content counts one token per byte), tool results as the model
  reads them, and retry feedback as rendered for the model;
- output counts the words of every response in the messages given, the new one included (text,
  thinking, one token plus the arguments per tool call, one per byte of a produced file);
- words are runs split on whitespace and `",.:`; empty text counts nothing;
- a streamed response starts from the estimate of its messages and adds each chunk's words as
  it arrives, so usage limits can stop it mid-stream.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from threadline.messages import (
    BinaryContent,
    FilePart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RequestUsage,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.models._base import ModelProfile
from threadline.models._provider import tool_result_text
from threadline.models._render import render_history

__all__ = ['estimate_tokens', 'estimate_usage']

_SPLIT = re.compile(r'[\s",.:]+')
_OVERHEAD = 50


def estimate_tokens(content: object) -> int:
    """Words in text, or in the text items of user content (inline bytes count one per byte)."""
    if not content:
        return 0
    if isinstance(content, str):
        return len(_SPLIT.split(content.strip()))
    tokens = 0
    if isinstance(content, (list, tuple)):
        for item in content:
            if isinstance(item, (str, TextContent)):
                tokens += estimate_tokens(item if isinstance(item, str) else item.content)
            elif isinstance(item, BinaryContent):
                tokens += len(item.data)
    return tokens


def estimate_usage(messages: Iterable[ModelMessage]) -> RequestUsage:
    """The estimate for a request over `messages` (pass the new response along to count it)."""
    rendered, _ = render_history(list(messages), ModelProfile())
    input_tokens, output_tokens = _OVERHEAD, 0
    for message in rendered:
        if isinstance(message, ModelRequest):
            input_tokens += sum(_request_part_tokens(part) for part in message.parts)
        elif isinstance(message, ModelResponse):
            output_tokens += sum(_response_part_tokens(part) for part in message.parts)
    return RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens)


def _request_part_tokens(part: object) -> int:
    if isinstance(part, (SystemPromptPart, UserPromptPart)):
        return estimate_tokens(part.content)
    if isinstance(part, ToolReturnPart):
        return estimate_tokens(tool_result_text(part))
    return 0


def _response_part_tokens(part: object) -> int:
    if isinstance(part, (TextPart, ThinkingPart)):
        return estimate_tokens(part.content)
    if isinstance(part, ToolCallPart):
        return 1 + estimate_tokens(part.args_as_json_str())
    if isinstance(part, FilePart):
        return estimate_tokens([part.content])
    return 0
