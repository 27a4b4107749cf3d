"""`DynamicToolset`: a toolset a function of the `RunContext` builds, for each run step or once
per run (pydantic-ai 2.62's; `@agent.toolset` and a function given where a toolset goes make one).

Rules:
- `per_run_step=True` (the default): the function is called before each step's tools are asked
  for; a toolset it returns that is not the one it had is entered, and the one it had exited;
- `per_run_step=False`: it is called once, when the run starts;
- the function may be sync or async and may return None (no tools, no instructions);
- each run works on its own copy (`for_run`), so runs sharing the agent never share what the
  function built.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias

from threadline.agent._context import AgentDepsT, RunContext
from threadline.agent.tools._toolsets import AbstractToolset, ToolsetTool

__all__ = ['DynamicToolset', 'ToolsetFunc', 'as_toolset']

ToolsetFunc: TypeAlias = Callable[
    [RunContext[AgentDepsT]],
    'AbstractToolset[AgentDepsT] | Awaitable[AbstractToolset[AgentDepsT] | None] | None',
]
"""A function of the run context that gives a toolset (or None), sync or async."""


class DynamicToolset(AbstractToolset[AgentDepsT]):
    """The toolset `toolset_func` builds (see the module rules)."""

    def __init__(
        self, toolset_func: ToolsetFunc[AgentDepsT], *, per_run_step: bool = True, id: str | None = None
    ) -> None:
        self.toolset_func, self.per_run_step, self._id = toolset_func, per_run_step, id
        self._toolset: AbstractToolset[AgentDepsT] | None = None

    def __repr__(self) -> str:
        return f'DynamicToolset({getattr(self.toolset_func, "__name__", self.toolset_func)!r})'

    async def _built(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT] | None:
        made = self.toolset_func(ctx)
        if inspect.isawaitable(made):
            made = await made
        return made

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        own = DynamicToolset(self.toolset_func, per_run_step=self.per_run_step, id=self._id)
        if not self.per_run_step:
            own._toolset = await own._built(ctx)
        return own

    async def for_run_step(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        if not self.per_run_step:
            return self
        made = await self._built(ctx)
        if made is not self._toolset:
            # Let go of the old one first, so a failure below never exits a toolset twice.
            old, self._toolset = self._toolset, None
            if old is not None:
                await old.__aexit__(None, None, None)
            await self._enter(made)
        return self

    async def _enter(self, toolset: AbstractToolset[AgentDepsT] | None) -> None:
        if toolset is not None:
            await toolset.__aenter__()
            self._toolset = toolset

    async def __aenter__(self) -> AbstractToolset[AgentDepsT]:
        held, self._toolset = self._toolset, None
        await self._enter(held)
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        held, self._toolset = self._toolset, None
        return await held.__aexit__(*exc_info) if held is not None else None

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        return {} if self._toolset is None else await self._toolset.get_tools(ctx)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> object:
        if self._toolset is None:
            raise KeyError(name)
        return await self._toolset.call_tool(name, tool_args, ctx, tool)

    async def get_instructions(self, ctx: RunContext[AgentDepsT]) -> str | Sequence[str] | None:
        return None if self._toolset is None else await self._toolset.get_instructions(ctx)

    def instruction_sources(self) -> list[str | Callable[..., object]]:
        return [] if self._toolset is None else self._toolset.instruction_sources()


def as_toolset(given: AbstractToolset[AgentDepsT] | ToolsetFunc[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
    """`given`, a function made a per-step `DynamicToolset`."""
    return given if isinstance(given, AbstractToolset) else DynamicToolset(given)
