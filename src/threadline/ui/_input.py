"""What both UI loaders check before they convert a client's messages, and the one error they raise.

Rules (each tested, and fuzzed):
- a loader raises `pydantic.ValidationError` and nothing else, whatever the client sent;
- text UTF-8 cannot carry (a lone surrogate) is refused where it is (`[0].parts[1].text`);
- messages nested deeper than `MAX_DEPTH` are refused before any recursive code meets them.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import msgspec
from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

__all__ = ['MAX_DEPTH', 'checked_input', 'loaded', 'only_validation_errors']

MAX_DEPTH = 64
T = TypeVar('T')
_Loc = tuple[int | str, ...]


def _refuse(title: str, loc: _Loc, kind: str, message: str) -> ValidationError:
    detail = InitErrorDetails(type=PydanticCustomError(kind, message), loc=loc, input='...')
    return ValidationError.from_exception_data(title, [detail])


def checked_input(raw: object, title: str) -> None:
    """Check `raw` for the rules above; a `ValidationError` at the first break.

    The common input breaks no rule, so it is checked in bulk first: one C encode finds any text
    UTF-8 cannot carry, and a walk over containers alone (no paths built, strings not visited)
    finds the depth. Only an input that fails either, or that the encoder cannot take, is walked
    value by value to name where it breaks."""
    if not _plainly_fine(raw):
        _walk(raw, title)


def _plainly_fine(raw: object) -> bool:
    """Whether `raw` surely breaks no rule (False: unsure, walk it)."""
    try:
        msgspec.json.encode(raw)  # refuses a lone surrogate, in a key or a value
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError):
        return False
    level: list[object] = [raw] if isinstance(raw, _CONTAINERS) else []
    # Values at depth d have paths of length d: the deepest allowed is MAX_DEPTH, so containers
    # deeper than MAX_DEPTH - 1 (whose items would sit past it) go to the walk.
    for _ in range(MAX_DEPTH):
        below: list[object] = []
        for value in level:
            items = value.values() if isinstance(value, dict) else value
            below.extend(item for item in items if isinstance(item, _CONTAINERS))  # type: ignore[attr-defined]
        if not below:
            return True
        level = below
    return False


_CONTAINERS = (dict, list, tuple)


def _walk(raw: object, title: str) -> None:
    """Walk `raw` (without recursion), value by value; a `ValidationError` at the first break."""
    stack: list[tuple[object, _Loc]] = [(raw, ())]
    while stack:
        value, loc = stack.pop()
        if isinstance(value, str):
            try:
                value.encode('utf-8')
            except UnicodeEncodeError:
                raise _refuse(
                    title, loc, 'lone_surrogate', 'holds a lone surrogate, which UTF-8 cannot carry'
                ) from None
            continue
        if len(loc) > MAX_DEPTH:
            raise _refuse(title, loc[:MAX_DEPTH], 'too_deep', f'nests deeper than {MAX_DEPTH} levels')
        if isinstance(value, dict):
            stack.extend((v, (*loc, str(k))) for k, v in value.items())
            stack.extend((k, (*loc, str(k))) for k in value if isinstance(k, str))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, (*loc, i)) for i, v in enumerate(value))


@contextmanager
def only_validation_errors(title: str) -> Iterator[None]:
    """Turn an error of the conversion after validation (a value the schema let through but the
    conversion cannot use) into a `ValidationError`, so callers catch one documented error."""
    try:
        yield
    except ValidationError:
        raise
    except (ValueError, TypeError, AttributeError, LookupError, UnicodeError, RecursionError, binascii.Error) as exc:
        raise _refuse(title, (), 'unconvertible', f'the messages cannot be converted ({type(exc).__name__})') from None


def loaded(title: str, raw: object, load: Callable[[], T]) -> T:
    """`load()` after `checked_input(raw)`, raising only `ValidationError`."""
    checked_input(raw, title)
    with only_validation_errors(title):
        return load()
