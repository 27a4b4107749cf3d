"""Every store parameter checked at the boundary, by name, before any backend code runs.

`validated(cls)` wraps each contract operation of a backend class so that a bad argument raises a
`UserError` naming the parameter and what it must be, instead of hanging a worker (`last=-10**12`),
overflowing (`limit=2**63`), or failing deep inside a driver (a lone surrogate, a NUL byte). The
rules are keyed by parameter name, so the contract states each rule once for every backend:

- ids (`conversation_id`, `run_id`, `parent_run_id`, `new_id`, `resume_token`) are non-empty strings of at most
  512 characters, valid UTF-8 (no lone surrogates), without NUL or other control characters;
- `scope` is a non-empty string (or `EVERY_SCOPE` where an operation allows it);
- counts and positions (`limit`, `offset`, `last`, `at`, `position`, `branch_id`,
  `expected_revision`) are integers (not bools) in a stated range;
- free text (`query`, `expected_effect`, `owner`, `decision`, `namespace`, ...) is valid UTF-8 of
  bounded length, and a notebook's `content` valid UTF-8 of any length;
- messages hold valid UTF-8 text (checked as they are encoded: `messages.wire.encode_each`).

A parameter whose default is None, or whose type admits None, may be None.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from collections.abc import Callable
from typing import Any, TypeVar

from threadline.exceptions import UserError
from threadline.storage._face import contract_operations
from threadline.storage._foreign import own_argument
from threadline.storage._neutral import check_scope
from threadline.storage._records import EVERY_SCOPE

__all__ = ['validated']

C = TypeVar('C', bound=type)

MAX_ID = 512
MAX_TEXT = 10_000
_COUNTS: dict[str, tuple[int, int]] = {
    'limit': (1, 10**9),
    'offset': (0, 2**53),
    'last': (0, 2**53),
    'at': (0, 2**53),
    'position': (0, 2**53),
    'branch_id': (0, 2**53),
    'expected_revision': (0, 2**53),
}
_IDS = {'conversation_id', 'run_id', 'parent_run_id', 'new_id', 'resume_token', 'holder'}
_TEXTS = {
    'query',
    'expected_effect',
    'owner',
    'decision',
    'destination',
    'observed_revision',
    'evidence_ref',
    'namespace',
}
_BLOBS = {'content'}
"""Text of any length that must still be valid UTF-8 (a notebook's content)."""
_CONTROL = re.compile(r'[\x00-\x1f\x7f]')


def _check_id(name: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise UserError(f'{name} must be a non-empty string, not {_show(value)}')
    if len(value) > MAX_ID:
        raise UserError(f'{name} is {len(value)} characters long; ids are at most {MAX_ID}')
    _check_encodable(name, value)
    if _CONTROL.search(value):
        raise UserError(f'{name} contains a control character (NUL, newline, ...); ids are printable text')


def _check_text(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise UserError(f'{name} must be a string, not {_show(value)}')
    if len(value) > MAX_TEXT:
        raise UserError(f'{name} is {len(value)} characters long; at most {MAX_TEXT} are accepted')
    _check_encodable(name, value)


def _check_encodable(name: str, value: str) -> None:
    try:
        value.encode('utf-8')
    except UnicodeEncodeError as exc:
        raise UserError(
            f'{name} is not valid Unicode text (a lone surrogate at character {exc.start}); send UTF-8 text'
        ) from None


def _check_count(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f'{name} must be an integer, not {_show(value)}')
    if not low <= value <= high:
        raise UserError(f'{name} must be between {low} and {high}, not {value}')


def _show(value: object) -> str:
    return type(value).__name__ if not isinstance(value, (str, int, float, type(None))) else repr(value)[:40]


def check_argument(name: str, value: object, default: object) -> None:
    """Apply the rule for parameter `name` (see the module docstring)."""
    if value is None and default is None:
        return
    if name == 'scope':
        if value is not EVERY_SCOPE:
            _check_encodable(name, check_scope(value))
    elif name in _IDS:
        _check_id(name, value)
    elif name in _COUNTS:
        _check_count(name, value, *_COUNTS[name])
    elif name in _TEXTS:
        _check_text(name, value)
    elif name in _BLOBS:
        if not isinstance(value, str):
            raise UserError(f'{name} must be a string, not {_show(value)}')
        _check_encodable(name, value)


def _check_record(value: object) -> None:
    """The same rules for the fields of a record passed whole (`StepWrite`, `SnapshotRequest`, ...)."""
    cls = type(value)
    names = _CHECKED_FIELDS.get(cls)
    if names is None:
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]
        names = _CHECKED_FIELDS[cls] = tuple(f.name for f in fields if _is_checked(f.name))
    for name in names:
        check_argument(name, getattr(value, name), None)  # a record's None means "not given"


_CHECKED_FIELDS: dict[type, tuple[str, ...]] = {}
"""Per record class, the fields that have a rule (computed once)."""


def _is_checked(name: str) -> bool:
    return name == 'scope' or name in _IDS or name in _COUNTS or name in _TEXTS or name in _BLOBS


def _is_record(value: object) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _wrap(method: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(method)
    parameters = list(signature.parameters.values())
    # (name, position among the positional arguments or None, default to check against)
    checked = [
        (
            parameter.name,
            index if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD) else None,
            None if parameter.default is None or 'None' in str(parameter.annotation) else parameter.default,
        )
        for index, parameter in enumerate(parameters)
        if _is_checked(parameter.name)
    ]
    plain = all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in parameters)
    # (name, position) of the arguments a pydantic-ai object may stand in (`_foreign`)
    foreign = [(p.name, index) for index, p in enumerate(parameters) if p.name in ('result', 'messages')]

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not plain or len(args) > len(parameters) or not kwargs.keys() <= signature.parameters.keys():
            signature.bind(*args, **kwargs)  # the TypeError Python would raise, before any check
        if foreign:
            args, kwargs = _owned(foreign, args, kwargs)
        for name, index, default in checked:
            if name in kwargs:
                check_argument(name, kwargs[name], default)
            elif index is not None and index < len(args):
                check_argument(name, args[index], default)
        for value in (*args, *kwargs.values()):
            if _is_record(value):
                _check_record(value)
        return method(*args, **kwargs)

    return call


def _owned(
    foreign: list[tuple[str, int]], args: tuple[object, ...], kwargs: dict[str, object]
) -> tuple[tuple[object, ...], dict[str, object]]:
    """The arguments with pydantic-ai results and messages seen as Threadline's."""
    listed = list(args)
    for name, index in foreign:
        if name in kwargs:
            kwargs[name] = own_argument(name, kwargs[name])
        elif index < len(listed):
            listed[index] = own_argument(name, listed[index])
    return tuple(listed), kwargs


def validated(cls: C) -> C:
    """Wrap every contract operation `cls` defines or inherits with the argument checks."""

    for name in contract_operations():
        method = getattr(cls, name, None)
        if method is not None:
            setattr(cls, name, _wrap(method))
    return cls
