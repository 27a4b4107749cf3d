"""`Hooks`: a capability made from plain functions, sync or async."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..agent._capability import AbstractCapability

__all__ = ['Hooks']

_HOOK_NAMES = (
    'before_run',
    'after_run',
    'on_run_error',
    'after_node_run',
    'before_model_request',
    'after_model_request',
    'on_model_request_error',
    'before_tool_execute',
    'after_tool_execute',
    'on_tool_execute_error',
)


class Hooks(AbstractCapability[Any]):
    """A capability whose hooks are the functions given, each called like the hook it replaces.

        Hooks(before_model_request=lambda ctx, request_context: request_context)

    A function may be sync or async; a hook not given keeps the default behaviour.
    """

    def __init__(self, **hooks: Callable[..., Any]) -> None:
        unknown = sorted(set(hooks) - set(_HOOK_NAMES))
        if unknown:
            raise TypeError(f'Hooks() got unknown hook(s) {unknown}; known hooks: {list(_HOOK_NAMES)}')
        self._hooks = hooks

    def __repr__(self) -> str:
        return f'Hooks({", ".join(sorted(self._hooks))})'

    def __getattribute__(self, name: str) -> Any:
        if name in _HOOK_NAMES:
            fn = object.__getattribute__(self, '_hooks').get(name)
            if fn is not None:
                return _as_async(fn)
        return object.__getattribute__(self, name)


def _as_async(fn: Callable[..., Any]) -> Callable[..., Any]:
    async def call(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    return call
