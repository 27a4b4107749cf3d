"""A chat client's "regenerate" and "edit" of an earlier turn, as the store's own branch.

The Vercel AI `useChat` client sends `trigger: 'regenerate-message'` to answer its last user
message again, and `trigger: 'submit-message'` with a `messageId` to send an edited user message
in place of an earlier one; either way its `messages` end with that user message and hold none
after it. Appending it would store the turn twice, so the server answers it on a new branch that
starts where that turn starts (`ConversationStore.save(branch_at=)`): the stored history then
reads as the client shows it, and the old answer stays reachable (`branches`, `load_at`).

Rules (each tested):
- The turn is found by counting: the client's n-th user message is the stored history's n-th
  request with a user prompt. Counting user turns, not messages, keeps the client's view and the
  store's aligned whether or not the client shows system messages or has the latest answer.
- The client's earlier user messages must say what the stored ones say (their text parts): a
  client that sent only part of its view, or a view of another branch, would otherwise rewrite
  the wrong turn. A difference is a 409 that says to reload.
- A client that shows as many earlier user turns as are stored (a turn whose answer failed and
  was never stored) appends, as a new turn does; one that shows more is out of date: a 409.
- A request that holds tool results before the user prompt cannot be split, so its turn cannot be
  answered again (a 409 naming why); system prompts before the user prompt are the agent's to give
  again, as on a new conversation.
- A plain submit (no `messageId`) always appends: clients may send only the new message.
"""

from __future__ import annotations

from collections.abc import Sequence

from threadline.exceptions import HTTPProblem
from threadline.messages import ModelMessage, ModelRequest, SystemPromptPart, UserPromptPart

__all__ = ['branch_point', 'earlier_turns']

_TRIGGERS = ('submit-message', 'regenerate-message')


def earlier_turns(body: object, messages: Sequence[object]) -> list[list[str]] | None:
    """The text of each user turn the client shows before the one it sends, when the request
    answers an earlier turn again (a regenerate or an edit); None for a new turn."""
    if not isinstance(body, dict):
        return None
    trigger = body.get('trigger', 'submit-message')
    if trigger not in _TRIGGERS:
        raise HTTPProblem(400, f'trigger: one of {", ".join(_TRIGGERS)}')
    message_id = body.get('messageId')
    if message_id is not None and not isinstance(message_id, str):
        raise HTTPProblem(400, 'messageId: a string when given')
    if trigger == 'submit-message' and message_id is None:
        return None
    users = [m for m in messages if isinstance(m, dict) and m.get('role') == 'user']
    return [_shown_text(m) for m in users[:-1]]


def branch_point(history: Sequence[ModelMessage], earlier: Sequence[Sequence[str]]) -> int | None:
    """Where the turn after the `earlier` user turns starts in `history`: the branch's length, or
    None when that turn is not stored (so the request appends). See the module docstring."""
    starts = [i for i, m in enumerate(history) if isinstance(m, ModelRequest) and _user_part(m) is not None]
    if len(earlier) > len(starts):
        raise HTTPProblem(
            409, f'the conversation holds {len(starts)} user turns, fewer than this client shows: reload it'
        )
    for shown, start in zip(earlier, starts, strict=False):
        if list(shown) != _stored_text(history[start]):
            raise HTTPProblem(409, 'this client shows other turns than the conversation holds: reload it')
    if len(earlier) == len(starts):
        return None
    start = starts[len(earlier)]
    request = history[start]
    assert isinstance(request, ModelRequest)
    before = request.parts[: _user_part(request)]
    if not all(isinstance(p, SystemPromptPart) for p in before):
        raise HTTPProblem(409, 'that turn shares its request with tool results, so it cannot be answered again')
    return start


def _user_part(request: ModelRequest) -> int | None:
    return next((i for i, p in enumerate(request.parts) if isinstance(p, UserPromptPart)), None)


def _shown_text(message: dict[str, object]) -> list[str]:
    parts = message.get('parts')
    items = parts if isinstance(parts, list) else []
    return [str(p.get('text')) for p in items if isinstance(p, dict) and p.get('type') == 'text']


def _stored_text(message: ModelMessage) -> list[str]:
    assert isinstance(message, ModelRequest)
    out: list[str] = []
    for part in message.parts:
        if isinstance(part, UserPromptPart):
            content = [part.content] if isinstance(part.content, str) else part.content
            out += [item for item in content if isinstance(item, str)]
    return out
