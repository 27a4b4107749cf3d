"""How a run ends: `End` carrying the `FinalResult` (the output and, for an output tool, its call)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ['End', 'FinalResult']

T = TypeVar('T')


@dataclass
class FinalResult(Generic[T]):
    """The run's output, and the output tool call that carried it (if any)."""

    output: T
    tool_name: str | None = None
    tool_call_id: str | None = None


@dataclass
class End(Generic[T]):
    """The node that ends a run; `data` is its `FinalResult`."""

    data: T
