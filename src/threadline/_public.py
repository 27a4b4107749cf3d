"""Public classes and functions report the module users import them from.

A class defined in `threadline.agent._agent` and exported from `threadline.agent` gets
`__module__ == 'threadline.agent'`, so reprs, docs, pickling and error messages show the import
path a user writes, never a private module. The first public module that exports a name claims
it (subpackages are imported before the top level, so `Agent` is `threadline.agent.Agent`).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterable
from typing import Any

__all__ = ['publish']


def publish(module: str, namespace: dict[str, Any], names: Iterable[str]) -> None:
    """Set `__module__` of the exported classes and functions still claimed by a private module."""
    for name in names:
        obj = namespace.get(name)  # lazily imported names (optional extras) are published by their module
        owner = getattr(obj, '__module__', None)
        if not isinstance(owner, str) or not owner.startswith('threadline') or not _is_private(owner):
            continue
        if isinstance(obj, type) and not _resolve_annotations(obj, namespace):
            continue
        if isinstance(obj, type) or (callable(obj) and hasattr(obj, '__qualname__')):
            try:
                obj.__module__ = module
            except (AttributeError, TypeError):  # a few builtin-backed objects refuse; their repr is theirs
                continue


def _resolve_annotations(cls: type, namespace: dict[str, Any]) -> bool:
    """Replace the class's own string annotations by the types they name, resolved in the module
    that defined it (or, for names it imports only for type checking, the public module's). Libraries that read annotations later (msgspec, pydantic, `get_type_hints`)
    look names up in `cls.__module__`, which is about to name a module that does not define them.
    False when a name cannot be resolved yet (then the class keeps its private module)."""
    own = inspect.get_annotations(cls)
    if not any(isinstance(value, str) for value in own.values()):
        return True
    try:
        hints = typing.get_type_hints(cls, localns=namespace, include_extras=True)
    except (NameError, AttributeError, TypeError):
        return False
    resolved = {name: hints.get(name, value) for name, value in own.items()}
    try:
        cls.__annotations__ = resolved
    except (AttributeError, TypeError):
        return False
    return True


def _is_private(module: str) -> bool:
    return any(part.startswith('_') for part in module.split('.'))
