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
from typing import Any, TypeVar, overload

from threadline.agent._context import AgentDepsT, RunContext
from threadline.agent.tools._docstrings import DocstringStyle
from threadline.agent.tools._tool import Tool
from threadline.agent.tools._toolsets import AbstractToolset, ToolsetTool
from threadline.exceptions import UserError

__all__ = ['FunctionToolset', 'merge_tools']

F = TypeVar('F', bound=Callable[..., object])


class FunctionToolset(AbstractToolset[AgentDepsT]):
    """Tools made from plain functions, registered with `add_function` or the `tool` decorator.

    The options (`max_retries`, `timeout`, `docstring_format`, `strict`, `sequential`,
    `requires_approval`, `defer_loading`, `include_return_schema`, `metadata`) are defaults for
    the tools added here: a tool's own option wins, and `metadata` is merged under the tool's.
    `instructions` (strings, functions of the `RunContext`, or a list) join the run's
    instructions while the toolset is in the run, as pydantic-ai 2.62's do."""

    def __init__(
        self,
        tools: Sequence[Tool[AgentDepsT] | Callable[..., Any]] = (),
        *,
        max_retries: int | None = None,
        timeout: float | None = None,
        docstring_format: DocstringStyle = 'auto',
        strict: bool | None = None,
        sequential: bool = False,
        requires_approval: bool = False,
        metadata: dict[str, object] | None = None,
        defer_loading: bool = False,
        include_return_schema: bool | None = None,
        id: str | None = None,
        instructions: str | Callable[..., object] | Sequence[str | Callable[..., object]] | None = None,
    ) -> None:
        self._id = id
        self.max_retries, self.metadata = max_retries, metadata
        self._defaults: dict[str, object] = {
            'timeout': timeout,
            'docstring_format': docstring_format,
            'strict': strict,
            'sequential': sequential,
            'requires_approval': requires_approval,
            'defer_loading': defer_loading,
            'include_return_schema': include_return_schema,
        }
        self._instructions = _instruction_list(instructions)
        self.tools: dict[str, Tool[AgentDepsT]] = {}
        for tool in tools:
            if isinstance(tool, Tool):
                self.add_tool(tool)
            else:
                self.add_function(tool)

    def __repr__(self) -> str:
        return f'FunctionToolset(id={self.id!r}, tools={list(self.tools)})'

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        return {name: ToolsetTool(self, t.tool_def, t.max_retries, t.validate_args) for name, t in self.tools.items()}

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        return await self.tools[name].call(ctx, tool_args)

    def instruction_sources(self) -> list[str | Callable[..., object]]:
        if type(self).get_instructions is not AbstractToolset.get_instructions:
            return [self.get_instructions]
        return list(self._instructions)

    def add_tool(self, tool: Tool[AgentDepsT]) -> None:
        """Add `tool` (this toolset's `max_retries` when it has none, its `metadata` merged under the tool's)."""
        if tool.name in self.tools:
            raise UserError(f'Tool name conflicts with an existing tool in this toolset: {tool.name!r}')
        if tool.max_retries is None and self.max_retries is not None:
            tool.max_retries = self.max_retries
        if self.metadata is not None:
            tool.metadata = {**self.metadata, **(tool.metadata or {})}
        self.tools[tool.name] = tool

    def add_function(self, function: Callable[..., Any], **options: Any) -> None:
        """Add `function` as a tool (the options of `Tool`; `retries=` is `max_retries=`); an
        option not given, or given as None, is this toolset's."""
        if 'retries' in options:
            options['max_retries'] = options.pop('retries')
        for name, default in self._defaults.items():
            if options.get(name) is None:
                options[name] = default
        self.add_tool(Tool(function, **options))

    @overload
    def tool(self, function: F, /) -> F: ...
    @overload
    def tool(self, /, **options: Any) -> Callable[[F], F]: ...

    def tool(self, function: F | None = None, /, **options: Any) -> F | Callable[[F], F]:
        """Decorator form of `add_function` (`@toolset.tool` or `@toolset.tool(name=..., ...)`); whether
        the function takes the `RunContext` is read off its first parameter."""
        return self._decorate(function, None, options)

    @overload
    def tool_plain(self, function: F, /) -> F: ...
    @overload
    def tool_plain(self, /, **options: Any) -> Callable[[F], F]: ...

    def tool_plain(self, function: F | None = None, /, **options: Any) -> F | Callable[[F], F]:
        """Decorator form of `add_function` for a function that takes no `RunContext`."""
        return self._decorate(function, False, options)

    def _decorate(self, function: F | None, takes_ctx: bool | None, options: dict[str, Any]) -> F | Callable[[F], F]:
        def register(fn: F) -> F:
            self.add_function(fn, takes_ctx=takes_ctx, **options)
            return fn

        return register(function) if function is not None else register

    def owned_by(self, capability_id: str) -> FunctionToolset[AgentDepsT]:
        """A copy whose tools belong to the deferred capability `capability_id`: each is offered
        only while that capability is loaded (this toolset is left as it was)."""
        owned: FunctionToolset[AgentDepsT] = FunctionToolset(id=self._id)
        for name, tool in self.tools.items():
            copy = _copy.copy(tool)
            copy._tool_def = replace(tool.tool_def, defer_loading=True, capability_id=capability_id)
            owned.tools[name] = copy
        return owned


def _instruction_list(
    given: str | Callable[..., object] | Sequence[str | Callable[..., object]] | None,
) -> list[str | Callable[..., object]]:
    if given is None:
        return []
    if isinstance(given, str) or callable(given):
        return [given]
    return list(given)


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
