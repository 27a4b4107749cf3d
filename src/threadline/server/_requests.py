"""Reading a chat request: the body, its fields, the user's new turn, ids and query numbers; what
is wrong is an `HTTPProblem` naming the field (`messages[2].parts[0].type`), never its value.

Rules (each tested):
- A body is read in chunks, counted as they come, and refused (413) the moment it passes the
  limit, whether or not it announced a `Content-Length`: an endless chunked upload costs at most
  the limit.
- A body must be sent as `application/json` (415 otherwise): a cross-site page can post
  `text/plain` without asking the browser first, never `application/json`.
- JSON that does not parse, holds a lone surrogate, or nests deeper than `MAX_DEPTH` is a 400.
- A conversation id is 1 to 512 characters, none of them a control character.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec
import pydantic
from starlette.requests import Request

from threadline.exceptions import HTTPProblem
from threadline.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

__all__ = [
    'MAX_DEPTH',
    'HTTPProblem',
    'body_bytes',
    'check_depth',
    'conversation_id',
    'field',
    'json_body',
    'new_turn',
    'paused_calls',
    'query_int',
]

T = TypeVar('T')
MAX_DEPTH = 64
"""How deep a body's arrays and objects may nest (a chat turn needs about ten levels)."""
MAX_ID = 512


async def json_body(request: Request, limit: int) -> object:
    """The request's JSON body, read at most `limit` bytes far (see the module docstring)."""
    return parse_json(await body_bytes(request, limit))


async def body_bytes(request: Request, limit: int) -> bytes:
    """The request's body as bytes: JSON by its content type, at most `limit` bytes."""
    kind = request.headers.get('content-type', '').split(';', 1)[0].strip().lower()
    if kind != 'application/json':
        raise HTTPProblem(415, 'send the body as application/json')
    length = request.headers.get('content-length', '')
    if length.isascii() and length.isdigit() and int(length) > limit:
        raise HTTPProblem(413, f'the body is over {limit} bytes')
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HTTPProblem(413, f'the body is over {limit} bytes')
        chunks.append(chunk)
    return b''.join(chunks)


def parse_json(raw: bytes) -> object:
    """`raw` as JSON, or a 400 saying why not (never echoing it)."""
    try:
        value = msgspec.json.decode(raw or b'null')
    except msgspec.DecodeError:
        raise HTTPProblem(400, 'the body is not JSON (or holds a lone surrogate)') from None
    except RecursionError:
        raise HTTPProblem(400, f'the body nests deeper than {MAX_DEPTH} levels') from None
    check_depth(value)
    return value


def check_depth(value: object) -> None:
    """A 400 when `value` (decoded JSON) nests deeper than `MAX_DEPTH`."""
    if _depth(value) > MAX_DEPTH:
        raise HTTPProblem(400, f'the body nests deeper than {MAX_DEPTH} levels')


def _depth(value: object) -> int:
    """How deep `value` nests, walked without recursion (stops counting past `MAX_DEPTH`)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


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


def conversation_id(value: str, name: str) -> str:
    """`value` if it can name a conversation (see the module docstring), else a 400 naming `name`."""
    if not value or len(value) > MAX_ID:
        raise HTTPProblem(400, f'{name}: 1 to {MAX_ID} characters')
    if not value.isprintable():
        raise HTTPProblem(400, f'{name}: must not hold control characters (a newline, NUL, ...)')
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
        raise HTTPProblem(400, f'messages{where}: {_described(error)}') from None
    parts = [p for m in history if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)]
    if not parts:
        raise HTTPProblem(400, "messages: the last message must be the user's new turn")
    return parts[-1].content, stripped


def _described(error: Any) -> str:
    """What is wrong, without the value: some of pydantic's messages quote it (a tag, an enum)."""
    message = str(error['msg'])
    for given in (error.get('input'), (error.get('ctx') or {}).get('tag')):
        if isinstance(given, str) and given and given in message:
            message = message.replace(given, '...')
    return message


def query_int(value: str | None, default: int, name: str, *, low: int = 0) -> int:
    """A query parameter's whole number, from `low` to 1000 (ASCII digits only: `²` is not 2)."""
    if value is None:
        return default
    if not (value.isascii() and value.isdigit()) or not low <= int(value) <= 1000:
        raise HTTPProblem(400, f'{name}: a whole number from {low} to 1000')
    return int(value)


def paused_calls(tail: Sequence[ModelMessage]) -> set[str]:
    """The calls a paused run left waiting: the last response's, less those a result answers."""
    last = next((i for i in range(len(tail) - 1, -1, -1) if isinstance(tail[i], ModelResponse)), None)
    if last is None or last < len(tail) - 2:
        return set()
    calls = {p.tool_call_id for p in tail[last].parts if isinstance(p, ToolCallPart)}
    answered = {
        p.tool_call_id
        for m in tail[last + 1 :]
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, (ToolReturnPart, RetryPromptPart))
    }
    return calls - answered
