"""`@on_event`: mark capability methods as listeners of the run's events, by event class.

    class Audit(AbstractCapability):
        @on_event(FunctionToolCallEvent)
        async def saw_call(self, ctx, event): ...

Rules (pydantic-ai 2.62's):
- a marked method is `async def method(self, ctx, event)`; bare `@on_event` hears every event,
  `@on_event(A, B)` the events that are instances of one of them;
- `AbstractCapability.on_event` calls a capability's marked methods in definition order,
  inherited ones first; a subclass that redefines a name without the mark removes that listener;
- a capability with marked methods hears events as one that overrides `on_event` does.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar, overload

__all__ = ['EventListener', 'listeners', 'on_event']

F = TypeVar('F', bound=Callable[..., Awaitable[None]])


class EventListener(Generic[F]):
    """A method marked with `@on_event`: it stays callable as the method it marks."""

    def __init__(self, func: F, event_types: tuple[type, ...]) -> None:
        self.func, self.event_types = func, event_types

    def hears(self, event: object) -> bool:
        return not self.event_types or isinstance(event, self.event_types)

    def __get__(self, instance: object, owner: type | None = None) -> object:
        return self.func.__get__(instance, owner) if instance is not None else self


@overload
def on_event(func: F, /) -> EventListener[F]: ...


@overload
def on_event(*event_types: type) -> Callable[[F], EventListener[F]]: ...


def on_event(*event_types: object) -> AnyListener | Callable[[F], EventListener[F]]:  # type: ignore[misc]
    """Mark an async capability method as a listener of events (of the classes given, or all)."""
    if len(event_types) == 1 and inspect.isfunction(event_types[0]):
        return EventListener(event_types[0], ())
    classes = tuple(given for given in event_types if isinstance(given, type))
    if len(classes) != len(event_types):
        raise TypeError(f'@on_event takes event classes, not {event_types!r}')

    def mark(func: F) -> EventListener[F]:
        return EventListener(func, classes)

    return mark


AnyListener = EventListener[Callable[..., Awaitable[None]]]

_FOUND: dict[type, tuple[AnyListener, ...]] = {}


def listeners(cls: type) -> tuple[AnyListener, ...]:
    """`cls`'s marked methods, in definition order, inherited ones first."""
    known = _FOUND.get(cls)
    if known is None:
        known = _FOUND[cls] = _collect(cls)
    return known


def _collect(cls: type) -> tuple[AnyListener, ...]:
    found: dict[str, AnyListener] = {}
    for base in reversed(cls.__mro__):
        for name, value in vars(base).items():
            if isinstance(value, EventListener):
                found[name] = value
            else:
                found.pop(name, None)
    return tuple(found.values())
