"""Capabilities made of one function or one toolset, as pydantic-ai 2.62 names them:
`PrepareTools`, `PrepareOutputTools` and `Toolset`.

Rules:
- `PrepareTools(func)` is the `prepare_tools` hook `func(ctx, tool_defs)` (sync or async): it
  sees the function tools of each step and returns those to offer (dropped ones cannot be
  called); `PrepareOutputTools(func)` the same for the output tools, with the output retry
  budget as `ctx.max_retries`;
- what they return follows the chain's rules: no added or renamed tools, and not None;
- `Toolset(toolset)` gives the run `toolset`, as a capability's `get_toolset()` does.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeAlias

from threadline.agent.capability import AbstractCapability, CapabilityDepsT
from threadline.models import ToolDefinition

if TYPE_CHECKING:
    from threadline.agent import RunContext
    from threadline.agent.tools import AbstractToolset

__all__ = ['PrepareOutputTools', 'PrepareTools', 'Toolset']

PrepareFunc: TypeAlias = Callable[
    ['RunContext[CapabilityDepsT]', list[ToolDefinition]],
    'list[ToolDefinition] | Awaitable[list[ToolDefinition]]',
]


class _OneFunction(AbstractCapability[CapabilityDepsT]):
    """A capability that is one prepare function (the two below differ only in the hook)."""

    def __init__(self, prepare_func: PrepareFunc[CapabilityDepsT]) -> None:
        self.prepare_func = prepare_func

    def __repr__(self) -> str:
        return f'{type(self).__name__}({self.prepare_func!r})'


class PrepareTools(_OneFunction[CapabilityDepsT]):
    """Filter or change each step's function tool definitions with `prepare_func`."""

    async def prepare_tools(
        self, ctx: RunContext[CapabilityDepsT], tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        return await _called(self.prepare_func, ctx, tool_defs)


class PrepareOutputTools(_OneFunction[CapabilityDepsT]):
    """Filter or change each step's output tool definitions with `prepare_func`."""

    async def prepare_output_tools(
        self, ctx: RunContext[CapabilityDepsT], tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        return await _called(self.prepare_func, ctx, tool_defs)


class Toolset(AbstractCapability[CapabilityDepsT]):
    """A capability that gives the run `toolset`."""

    def __init__(self, toolset: AbstractToolset[CapabilityDepsT]) -> None:
        self.toolset = toolset

    def get_toolset(self) -> AbstractToolset[CapabilityDepsT] | None:
        return self.toolset

    def __repr__(self) -> str:
        return f'{type(self).__name__}({self.toolset!r})'


async def _called(
    func: PrepareFunc[CapabilityDepsT], ctx: RunContext[CapabilityDepsT], tool_defs: list[ToolDefinition]
) -> list[ToolDefinition]:
    result = func(ctx, tool_defs)
    return await result if inspect.isawaitable(result) else result
