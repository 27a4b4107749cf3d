"""What a run starts from: the history it is given (checked), its ids, and the prompt of a run
resumed from a history that ends in a request."""

from __future__ import annotations

from collections.abc import Sequence

from threadline._uuid import uuid7
from threadline.exceptions import UserError
from threadline.messages import ModelMessage, ModelRequest, ModelResponse, UserContent, UserPromptPart

__all__ = ['check_history', 'resolve_ids', 'resumed_prompt']


_EXACT_TYPES = frozenset({ModelRequest, ModelResponse})


def check_history(message_history: Sequence[ModelMessage] | None) -> list[ModelMessage]:
    if message_history is None:
        return []
    if isinstance(message_history, (str, bytes, dict)):
        raise UserError('message_history must be a list of messages; load stored JSON with ModelMessagesTypeAdapter')
    history = list(message_history)
    if _EXACT_TYPES.issuperset(map(type, history)):
        return history  # the common case, checked in C
    for index, message in enumerate(history):
        if not isinstance(message, (ModelRequest, ModelResponse)):
            raise UserError(
                f'message_history[{index}] is a {type(message).__name__}, not a ModelRequest or ModelResponse. '
                'Load stored history with ModelMessagesTypeAdapter.validate_python/validate_json first.'
            )
    return history


def resolve_ids(history: list[ModelMessage], run_id: str | None, conversation_id: str | None) -> tuple[str, str]:
    """Apply the id rules: run ids are never inherited; conversation ids are, unless 'new' or given."""
    if run_id is not None:
        if run_id == '':
            raise UserError(
                '`run_id` must be a non-empty string when provided: an empty run_id breaks new_messages() '
                'boundary detection.'
            )
        if any(m.run_id == run_id for m in history):
            raise UserError(
                f'`run_id={run_id!r}` already appears in message_history. Each run needs a distinct run_id; '
                'correlate runs with conversation_id, and when retrying a failed run with the same run_id, '
                "rebuild message_history without the failed attempt's messages."
            )
    if conversation_id is None:
        conversation_id = next((m.conversation_id for m in reversed(history) if m.conversation_id is not None), None)
    elif conversation_id == 'new':
        conversation_id = None
    return run_id or uuid7(), conversation_id if conversation_id is not None else uuid7()


def resumed_prompt(history: list[ModelMessage]) -> str | Sequence[UserContent] | None:
    """The prompt of a run resumed from a history that ends in a request: its last user prompt."""
    if history and isinstance(history[-1], ModelRequest):
        for part in reversed(history[-1].parts):
            if isinstance(part, UserPromptPart):
                return part.content
    return None
