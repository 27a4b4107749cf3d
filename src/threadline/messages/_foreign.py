"""Messages of another library handed to a Threadline entry point, converted once at the boundary.

pydantic-ai writes the same wire form as Threadline, so its message objects can be audited,
signed, verified and stored as they are: `threadline.pydantic_ai` converts them object by object,
exactly. That package comes last in the package order, so nothing here imports it: importing it
registers its converter (`register_bridge`), and a pydantic-ai user imports it anyway (for
`load_history`, the capabilities).

Rules:
- A sequence holding only Threadline messages comes back as a list of the same objects.
- pydantic-ai messages (their class is from the `pydantic_ai` package) come back converted; with
  no converter registered, a `UserError` says to import `threadline.pydantic_ai`.
- Anything else is a `UserError` naming its position and type, never its content.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from threadline.exceptions import UserError
from threadline.messages._messages import ModelMessage, ModelRequest, ModelResponse
from threadline.messages._usage import RunUsage

__all__ = ['Bridge', 'ForeignMessage', 'from_pydantic_ai_package', 'own_messages', 'own_run_usage', 'register_bridge']


class ForeignMessage(Protocol):
    """A message object of another library that writes Threadline's wire form (pydantic-ai's)."""

    @property
    def kind(self) -> str: ...

    @property
    def parts(self) -> Sequence[object]: ...


class Bridge(Protocol):
    """What `threadline.pydantic_ai` registers: pydantic-ai messages, and a run's own usage."""

    def messages(self, items: list[object]) -> list[ModelMessage]: ...

    def run_usage(self, result: object) -> RunUsage: ...


_bridges: list[Bridge] = []


def register_bridge(bridge: Bridge) -> None:
    """Let Threadline's entry points take pydantic-ai objects (done by `import threadline.pydantic_ai`)."""
    _bridges[:] = [bridge]


def _bridge(where: str, value: object) -> Bridge:
    if not _bridges:
        raise UserError(
            f'{where} is a pydantic-ai {type(value).__name__}: import threadline.pydantic_ai '
            "(extra 'pydantic-ai') and Threadline takes pydantic-ai objects as they are"
        )
    return _bridges[0]


def from_pydantic_ai_package(value: object) -> bool:
    """Whether `value`'s class comes from pydantic-ai (answered without importing it)."""
    return type(value).__module__.split('.', 1)[0] == 'pydantic_ai'


def own_messages(items: Iterable[object], name: str = 'messages') -> list[ModelMessage]:
    """`items` as Threadline messages (rules in the module docstring)."""
    listed = list(items)
    foreign: list[object] = []
    for index, item in enumerate(listed):
        if isinstance(item, ModelRequest | ModelResponse):
            continue
        if not from_pydantic_ai_package(item):
            raise UserError(f'{name}[{index}] is a {type(item).__name__}, not a ModelRequest or ModelResponse')
        foreign.append(item)
    if not foreign:
        return [item for item in listed if isinstance(item, ModelRequest | ModelResponse)]
    converted = iter(_bridge(name, foreign[0]).messages(foreign))
    return [item if isinstance(item, ModelRequest | ModelResponse) else next(converted) for item in listed]


def own_run_usage(result: object) -> RunUsage:
    """The usage of a pydantic-ai run alone (its `result.usage` holds what `usage=` started it with
    too): see `threadline.pydantic_ai.run_usage_of`."""
    return _bridge('result', result).run_usage(result)
