"""`Hooks`: a capability made from plain functions, sync or async, given by name or registered
with decorators.

    hooks = Hooks(before_model_request=trim)

    @hooks.on.tool_execute(tools=['refund'], timeout=5)
    async def audit(ctx, *, call, tool_def, args, handler):
        return await handler(args)

Rules:
- Names follow pydantic-ai's `Hooks`: `before_x` / `after_x` as they are, the wrap hook by the
  lifecycle's bare name (`run`, `node_run`, `model_request`, `tool_validate`, `tool_execute`) and
  the error hook as `x_error`. The capability method names (`wrap_run`, `on_run_error`, ...) are
  accepted too.
- Each function is called exactly as the hook it stands for (same arguments), and may be sync:
  a sync function runs in a worker thread (in a copy of the caller's context variables), so it
  does not stall the event loop and its `timeout=` can fire; an awaitable it returns is awaited.
- Several functions for one hook run in registration order, under `CapabilityChain`'s rules (a
  `Hooks` is a `CombinedCapability` of one-function capabilities).
- `tools=[...]` limits a tool hook to those tool names; other calls pass through untouched.
- `timeout=` (seconds) bounds one call of the function: past it the run fails with
  `HookTimeoutError`, naming the hook.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from threadline.agent import DeferredToolRequests, DeferredToolResults, RunContext
from threadline.agent.capability import HOOKS, AbstractCapability, CapabilityDepsT
from threadline.exceptions import HookTimeoutError

__all__ = ['CombinedCapability', 'HandleDeferredToolCalls', 'HookTimeoutError', 'Hooks']


def _method_name(name: str) -> str:
    """The capability method a `Hooks` name stands for."""
    if name in HOOKS:
        return name
    if name.endswith('_error') and f'on_{name}' in HOOKS:
        return f'on_{name}'
    if f'wrap_{name}' in HOOKS:
        return f'wrap_{name}'
    known = sorted(
        {*HOOKS, *(h[3:] for h in HOOKS if h.startswith('on_')), *(h[5:] for h in HOOKS if h.startswith('wrap_'))}
    )
    raise TypeError(f'unknown hook {name!r}; known hooks: {known}')


class CombinedCapability(AbstractCapability[CapabilityDepsT]):
    """Several capabilities acting as one, in the order given (the chain flattens it in place)."""

    def __init__(self, capabilities: Sequence[AbstractCapability[Any]] = ()) -> None:
        self.capabilities = list(capabilities)

    @property
    def combined(self) -> list[AbstractCapability[Any]]:
        return self.capabilities

    def for_agent(self, agent: Any) -> AbstractCapability[CapabilityDepsT]:
        """Each member's `for_agent` (itself when none changes)."""
        members = [c.for_agent(agent) for c in self.capabilities]
        if all(new is old for new, old in zip(members, self.capabilities, strict=True)):
            return self
        return CombinedCapability(members)

    def __repr__(self) -> str:
        return f'{type(self).__name__}({self.capabilities!r})'


class _OneHook(AbstractCapability[Any]):
    """One function standing for one hook method."""

    def __init__(self, method: str, fn: Callable[..., Any], tools: Sequence[str] | None, timeout: float | None) -> None:
        self.method, self.fn, self.timeout = method, fn, timeout
        # An async function, or an object whose `__call__` is one.
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)
        self.tools = frozenset(tools) if tools is not None else None
        if self.tools is not None and 'tool_' not in method:
            raise TypeError(f'tools= only applies to tool hooks, not {method!r}')
        setattr(self, method, self._call)

    def overridden_hooks(self) -> frozenset[str]:
        return frozenset({self.method})

    def __repr__(self) -> str:
        return f'Hook({self.method}={getattr(self.fn, "__name__", self.fn)!r})'

    async def _call(self, *args: Any, **kwargs: Any) -> Any:
        if self.tools is not None and kwargs['call'].tool_name not in self.tools:
            return await _pass_through(self.method, kwargs)
        if self.timeout is None:
            return await self._called(args, kwargs)
        try:
            return await asyncio.wait_for(self._called(args, kwargs), self.timeout)
        except TimeoutError:
            name = getattr(self.fn, '__name__', repr(self.fn))
            raise HookTimeoutError(self.method, name, self.timeout) from None

    async def _called(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self._is_async:
            return await self.fn(*args, **kwargs)
        # A thread, so a slow sync hook neither blocks the loop nor escapes its timeout (the
        # thread itself runs on; Python cannot stop it).
        call = functools.partial(contextvars.copy_context().run, self.fn, *args, **kwargs)
        result = await asyncio.get_running_loop().run_in_executor(None, call)
        return await result if inspect.isawaitable(result) else result


async def _pass_through(method: str, kwargs: dict[str, Any]) -> Any:
    """What a tool hook does for a tool it is not registered for: nothing."""
    if method.startswith('wrap_'):
        return await kwargs['handler'](kwargs['args'])
    if method.startswith('on_'):
        raise kwargs['error']
    return kwargs['result'] if 'result' in kwargs else kwargs['args']


class _Registration:
    """`hooks.on`: `@hooks.on.before_model_request`, or `@hooks.on.tool_execute(tools=[...], timeout=5)`."""

    def __init__(self, hooks: Hooks) -> None:
        self._hooks = hooks

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = _method_name(name)

        def register(
            fn: Callable[..., Any] | None = None, /, *, tools: Sequence[str] | None = None, timeout: float | None = None
        ) -> Any:
            def decorator(f: Callable[..., Any]) -> Callable[..., Any]:
                self._hooks.capabilities.append(_OneHook(method, f, tools, timeout))
                return f

            return decorator(fn) if fn is not None else decorator

        return register


class Hooks(CombinedCapability):
    """A capability whose hooks are the functions given (see the module docstring for the names).

    Hooks(before_model_request=lambda ctx, request_context: request_context)
    """

    def __init__(self, **hooks: Callable[..., Any]) -> None:
        super().__init__([_OneHook(_method_name(name), fn, None, None) for name, fn in hooks.items()])
        self.on = _Registration(self)

    def __repr__(self) -> str:
        return f'Hooks({", ".join(h.method for h in self.capabilities if isinstance(h, _OneHook))})'


DeferredHandler = Callable[
    [RunContext[Any], DeferredToolRequests], 'DeferredToolResults | Awaitable[DeferredToolResults | None] | None'
]
"""A `HandleDeferredToolCalls` handler: the results for the waiting calls (sync or async), or None."""


class HandleDeferredToolCalls(AbstractCapability[Any]):
    """Answers calls that wait on approval or an outside result during the run, with
    `handler(ctx, requests)` (sync or async) returning `DeferredToolResults`, or None to leave
    them to the caller (the run then ends with `DeferredToolRequests`, as without it).

        HandleDeferredToolCalls(lambda ctx, requests: requests.build_results(approve_all=True))
    """

    def __init__(self, handler: DeferredHandler) -> None:
        self.handler = handler

    async def handle_deferred_tool_calls(
        self, ctx: RunContext[Any], *, requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        result = self.handler(ctx, requests)
        answer: DeferredToolResults | None = await result if inspect.isawaitable(result) else result
        return answer
