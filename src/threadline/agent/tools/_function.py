"""`FunctionToolset`: a named group of tools, the way a capability hands tools to a run.

This is the part of the reference's toolset API that capabilities need today: a capability returns
one from `get_toolset()`, and every run that has the capability can call its tools. Names must be
unique across the agent's own tools and every toolset of the run (a clash is a `UserError` at run
start, naming the tool), because the model addresses a tool by name alone.
"""

from __future__ import annotations

import copy as _copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from threadline.agent._context import AgentDepsT, RunContext
from threadline.agent.tools._tool import Tool
from threadline.agent.tools._toolsets import AbstractToolset, ToolsetTool
from threadline.exceptions import UserError

__all__ = ['FunctionToolset', 'merge_tools']

F = TypeVar('F', bound=Callable[..., object])


class FunctionToolset(AbstractToolset[AgentDepsT]):
    """Tools made from plain functions, registered with `add_function` or the `tool` decorator."""

    def __init__(self, tools: Sequence[Tool[AgentDepsT] | Callable[..., Any]] = (), *, id: str | None = None) -> None:
        self._id = id
        self.tools: dict[str, Tool[AgentDepsT]] = {}
        for tool in tools:
            self.add_tool(tool if isinstance(tool, Tool) else Tool(tool))

    def __repr__(self) -> str:
        return f'FunctionToolset(id={self.id!r}, tools={list(self.tools)})'

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        return {name: ToolsetTool(self, t.tool_def, t.max_retries, t.validate_args) for name, t in self.tools.items()}

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        return await self.tools[name].call(ctx, tool_args)

    def add_tool(self, tool: Tool[AgentDepsT]) -> None:
        if tool.name in self.tools:
            raise UserError(f'Tool name conflicts with an existing tool in this toolset: {tool.name!r}')
        self.tools[tool.name] = tool

    def add_function(self, function: Callable[..., Any], **options: Any) -> None:
        """Add `function` as a tool (`name=`, `description=`, `max_retries=`, `takes_ctx=`, `strict=` as for
        `Tool`)."""
        self.add_tool(Tool(function, **options))

    def owned_by(self, capability_id: str) -> FunctionToolset[AgentDepsT]:
        """A copy whose tools belong to the deferred capability `capability_id`: each is offered
        only while that capability is loaded (this toolset is left as it was)."""
        owned: FunctionToolset[AgentDepsT] = FunctionToolset(id=self._id)
        for name, tool in self.tools.items():
            copy = _copy.copy(tool)
            copy._tool_def = replace(tool.tool_def, defer_loading=True, capability_id=capability_id)
            owned.tools[name] = copy
        return owned

    def tool(self, function: F, /) -> F:
        """Decorator form of `add_function`."""
        self.add_function(function)
        return function

    def tool_plain(self, function: F, /) -> F:
        """Decorator form of `add_function` for a function that takes no `RunContext`."""
        self.add_function(function, takes_ctx=False)
        return function


def merge_tools(
    own: Mapping[str, Tool[Any]], toolsets: Iterable[tuple[str, FunctionToolset[Any]]]
) -> dict[str, Tool[Any]]:
    """The agent's tools plus each `(owner, toolset)`'s, refusing a name two of them share."""
    merged = dict(own)
    owners = dict.fromkeys(own, 'the agent')
    for owner, toolset in toolsets:
        for name, tool in toolset.tools.items():
            if name in merged:
                raise UserError(
                    f'Tool name {name!r} from {owner} conflicts with a tool from {owners[name]}: give one of them '
                    'another name'
                )
            merged[name], owners[name] = tool, owner
    return merged
