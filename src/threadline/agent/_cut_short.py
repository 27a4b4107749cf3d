"""Responses the model's own limits cut short: errors that say so, instead of asking again.

Rules (pydantic-ai 2.62's, probed):
- A response without output (no parts, blank text only, or thinking beside blank text only) is
  not retried when its finish reason is `length` (`UnexpectedModelBehavior`, naming the
  `max_tokens` the request was sent with) or `content_filter` (`ContentFilterError`, naming the
  provider's reason): the same request would be cut short the same way.
- When a retry budget runs out (a tool's or the output's) and the last response was cut short
  by the token limit inside its last tool call's arguments, the error is `IncompleteToolCall`:
  it was the limit, not the model, that broke the arguments.
- The messages name limits and the provider's reason codes, never the response's content; the
  response itself is on `ContentFilterError.body` for whoever asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.exceptions import ContentFilterError, IncompleteToolCall, UnexpectedModelBehavior
from threadline.messages import ModelMessagesTypeAdapter, ModelResponse, TextPart, ThinkingPart, ToolCallPart

if TYPE_CHECKING:
    from threadline.agent._state import RunState

__all__ = ['check_incomplete_tool_call', 'refuse_cut_short', 'without_output']


def without_output(response: ModelResponse) -> bool:
    """No parts, or only blank text and thinking: nothing that could be the output."""
    return all(isinstance(p, ThinkingPart) or (isinstance(p, TextPart) and not p.content) for p in response.parts)


def refuse_cut_short(state: RunState, response: ModelResponse) -> None:
    """Raise when a response without output was stopped by the token limit or a content filter."""
    if response.finish_reason == 'length':
        raise UnexpectedModelBehavior(
            f'Model token limit ({_limit(state)}) exceeded before any response was generated. Increase the '
            '`max_tokens` model setting, or simplify the prompt to result in a shorter response that will fit '
            'within the limit.'
        )
    if response.finish_reason == 'content_filter':
        details = response.provider_details or {}
        if reason := details.get('finish_reason'):
            message = f'Content filter triggered. Finish reason: {reason!r}'
        elif reason := details.get('block_reason'):
            message = f'Content filter triggered. Block reason: {reason!r}'
        elif details.get('refusal'):
            message = 'Content filter triggered: the model refused (the refusal is in `body`).'
        else:
            message = 'Content filter triggered.'
        raise ContentFilterError(message, body=ModelMessagesTypeAdapter.dump_json([response], indent=2).decode())


def check_incomplete_tool_call(state: RunState) -> None:
    """Raise `IncompleteToolCall` if the last response was cut short inside its last tool call."""
    last = state.history[-1] if state.history else None
    if not isinstance(last, ModelResponse):
        last = next((m for m in reversed(state.history) if isinstance(m, ModelResponse)), None)
    if last is None or last.finish_reason != 'length' or not last.parts:
        return
    call = last.parts[-1]
    if not isinstance(call, ToolCallPart):
        return
    try:
        call.args_as_dict(raise_if_invalid=True)
    except ValueError:
        raise IncompleteToolCall(
            f'Model token limit ({_limit(state)}) exceeded while generating a tool call, resulting in incomplete '
            'arguments. Increase the `max_tokens` model setting, or simplify the prompt to result in a shorter '
            'response that will fit within the limit.'
        ) from None


def _limit(state: RunState) -> object:
    return state.last_max_tokens or 'provider default'
