"""Reading a chat request: the body's fields, the user's new turn, and query numbers; what is
wrong is an `HTTPProblem` naming the field (`messages[2].parts[0].type`)."""

from __future__ import annotations

from typing import Any, TypeVar

import pydantic

from threadline.exceptions import HTTPProblem
from threadline.messages import ModelRequest, UserPromptPart

__all__ = ['HTTPProblem', 'field', 'new_turn', 'query_int']

T = TypeVar('T')


def field(body: object, name: str, kind: type[T]) -> T:
    """`body[name]`, which must be a `kind` (a non-empty one, for text), else a 400 naming it."""
    if not isinstance(body, dict):
        raise HTTPProblem(400, 'the body must be a JSON object')
    value = body.get(name)
    if not isinstance(value, kind):
        raise HTTPProblem(400, f'{name}: required, a {kind.__name__}')
    if kind is str and not value:
        raise HTTPProblem(400, f'{name}: must not be empty')
    return value


def new_turn(load: Any, messages: list[Any], offset: int) -> tuple[Any, list[Any]]:
    """The user's new turn (a prompt) from the last message a client sent (at `offset` in the
    body's list), and what sanitizing stripped."""

    try:
        history, stripped = load(messages)
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        loc = list(error['loc'])
        if loc and isinstance(loc[0], int):
            loc[0] += offset
        where = ''.join(f'[{p}]' if isinstance(p, int) else f'.{p}' for p in loc)
        raise HTTPProblem(400, f'messages{where}: {error["msg"]}') from None
    parts = [p for m in history if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)]
    if not parts:
        raise HTTPProblem(400, "messages: the last message must be the user's new turn")
    return parts[-1].content, stripped


def query_int(value: str | None, default: int, name: str) -> int:
    if value is None:
        return default
    if not value.isdigit() or int(value) > 1000:
        raise HTTPProblem(400, f'{name}: a whole number from 0 to 1000')
    return int(value)
