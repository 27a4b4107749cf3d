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
    """Walk `raw` (without recursion) for the rules above; a `ValidationError` at the first break."""
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
