"""A model's budget, for the run loop and the capabilities that watch it: how full the context
window is (the tokens the next request will carry, counted and as a share) and, from
genai-prices, what a response costs (`price_of`, `priced`).

Rules:
- The count starts from the last response's reported usage: its input tokens (cached ones
  included) plus its output tokens, since the response itself goes back in the next request.
- What the history gained after that response (tool results, a new prompt, enqueued content) is
  estimated: a quarter token per character of the text the model reads, and 1,500 tokens per
  image, audio or document item (about what providers charge for a one-megapixel image).
- With no response yet, or a last response without usage, the count is unknown (None): a
  request's true size depends on tokenizers and tool schemas that only the provider sees.
- The share is the count over the model's `context_window`; None when either is unknown. It can
  pass 1.0 when the last answer came from a model with a larger window.
"""

from __future__ import annotations

from collections.abc import Sequence

from threadline.messages import (
    BinaryContent,
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.messages.wire import encoder
from threadline.models._deadline import request_timeout, within_deadline
from threadline.models._prices import price_of, priced
from threadline.models._provider import tool_result_text

__all__ = [
    'context_tokens',
    'context_window_fraction',
    'estimate_added_tokens',
    'price_of',
    'priced',
    'request_timeout',
    'within_deadline',
]

CHARS_PER_TOKEN = 4
MEDIA_TOKENS = 1_500


def context_tokens(messages: Sequence[ModelMessage]) -> int | None:
    """The tokens a request over `messages` will carry (see the module docstring), or None."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelResponse):
            usage = message.usage
            reported = usage.input_tokens + usage.output_tokens
            if not reported:
                return None
            return reported + estimate_added_tokens(messages[index + 1 :])
    return None


def context_window_fraction(messages: Sequence[ModelMessage], window: int | None) -> float | None:
    """`context_tokens(messages)` over `window`, or None when either is unknown."""
    if not window or window <= 0:
        return None
    tokens = context_tokens(messages)
    return None if tokens is None else tokens / window


def estimate_added_tokens(messages: Sequence[ModelMessage]) -> int:
    """A rough token count of requests (tool results, prompts) not yet measured by a provider."""
    chars, media = 0, 0
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                chars += len(part.content)
            elif isinstance(part, UserPromptPart):
                content = part.content
                items = [content] if isinstance(content, str) else list(content)
                for item in items:
                    if isinstance(item, str):
                        chars += len(item)
                    elif isinstance(item, BinaryContent) or hasattr(item, 'url'):
                        media += 1
            elif isinstance(part, ToolReturnPart):
                chars += len(tool_result_text(part))
            elif isinstance(part, RetryPromptPart | RetryFeedbackPart | CompactionPart):
                said = part.content
                chars += len(said) if isinstance(said, str) else len(encoder.encode(said or ''))
    return -(-chars // CHARS_PER_TOKEN) + media * MEDIA_TOKENS
