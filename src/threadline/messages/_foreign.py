"""Messages of another library handed to a Threadline entry point, converted once at the boundary.

pydantic-ai writes the same wire form as Threadline, so its message objects can be audited,
signed, verified and stored as they are: `threadline.pydantic_ai` converts them object by object,
exactly. That package is imported only when such an object is handed over, so a Threadline user
never loads pydantic-ai; it is the one import of that package from a package before it, listed in
`tests/test_architecture.py` (`BRIDGES`).

Rules:
- A sequence holding only Threadline messages comes back as a list of the same objects.
- pydantic-ai messages (their class is from the `pydantic_ai` package) come back converted.
- Anything else is a `UserError` naming its position and type, never its content.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from threadline.exceptions import UserError
from threadline.messages._messages import ModelMessage, ModelRequest, ModelResponse
from threadline.messages._usage import RunUsage

__all__ = ['ForeignMessage', 'from_pydantic_ai_package', 'own_messages', 'own_run_usage', 'own_usage']


class ForeignMessage(Protocol):
    """A message object of another library that writes Threadline's wire form (pydantic-ai's)."""

    @property
    def kind(self) -> str: ...

    @property
    def parts(self) -> Sequence[object]: ...


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
    from threadline.pydantic_ai import from_pydantic_ai

    converted = iter(from_pydantic_ai(foreign))
    return [item if isinstance(item, ModelRequest | ModelResponse) else next(converted) for item in listed]


def own_usage(usage: object) -> RunUsage:
    """A run's usage as Threadline's `RunUsage` (pydantic-ai's is converted field by field)."""
    if isinstance(usage, RunUsage):
        return usage
    if from_pydantic_ai_package(usage):
        from threadline.pydantic_ai import usage_from_pydantic_ai

        return usage_from_pydantic_ai(usage)
    raise UserError(f'usage is a {type(usage).__name__}, not a RunUsage')


def own_run_usage(result: object) -> RunUsage:
    """The usage of a pydantic-ai run alone (its `result.usage` holds what `usage=` started it with
    too): see `threadline.pydantic_ai.run_usage_of`."""
    from threadline.pydantic_ai import run_usage_of

    return run_usage_of(result)
