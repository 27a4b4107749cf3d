"""`Capability`: instructions, tools and toolsets bundled as one capability, without subclassing
(pydantic-ai 2.62's `Capability`).

Rules:
- `instructions=` is a string, an instruction function (of the `RunContext` or of nothing, sync
  or async) or a list of them; `@cap.instructions` (with or without parentheses) adds more.
  They join the run's instructions, after the agent's, in the order given;
- `tools=` and `@cap.tool` / `@cap.tool_plain` are function tools, named as the agent's are; a
  tool registered after construction still reaches every later run;
- `toolsets=` are toolsets of any kind, asked for their tools at each step as the agent's
  `toolsets=` are; a function of the `RunContext` given there builds one per step
  (a `DynamicToolset`);
- `id`, `description` and `defer_loading=True` work as on any capability (a deferred one may
  give function tools only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, overload

from threadline.agent.capability import AbstractCapability, CapabilityDepsT, CapabilityInstructions
from threadline.agent.tools import AbstractToolset, CombinedToolset, FunctionToolset, Tool, ToolsetFunc, as_toolset

__all__ = ['Capability']

F = TypeVar('F', bound=Callable[..., object])


class Capability(AbstractCapability[CapabilityDepsT]):
    """A capability made of instructions, tools and toolsets (see the module rules). For hooks,
    model settings or per-run logic, subclass `AbstractCapability` instead."""

    def __init__(
        self,
        *,
        instructions: CapabilityInstructions | None = None,
        toolsets: Sequence[AbstractToolset[CapabilityDepsT] | ToolsetFunc[CapabilityDepsT]] | None = None,
        tools: Sequence[Tool[CapabilityDepsT] | Callable[..., object]] = (),
        id: str | None = None,
        description: str | None = None,
        defer_loading: bool = False,
    ) -> None:
        self.id, self.description, self.defer_loading = id, description, defer_loading
        self.toolsets: tuple[AbstractToolset[CapabilityDepsT], ...] = tuple(as_toolset(t) for t in toolsets or ())
        self.tools = tools
        self._function_toolset: FunctionToolset[CapabilityDepsT] = FunctionToolset(tools, id=id)
        self._instructions: list[str | Callable[..., object]] = _as_list(instructions)

    def get_instructions(self) -> CapabilityInstructions | None:
        return list(self._instructions) or None

    def get_toolset(self) -> AbstractToolset[CapabilityDepsT] | None:
        members: list[AbstractToolset[CapabilityDepsT]] = [*self.toolsets]
        if self._function_toolset.tools or not members:
            members.insert(0, self._function_toolset)  # the live one: tools added later still show
        return members[0] if len(members) == 1 else CombinedToolset(members)

    @overload
    def tool(self, func: F, /) -> F: ...
    @overload
    def tool(self, /, **options: Any) -> Callable[[F], F]: ...

    def tool(self, func: F | None = None, /, **options: Any) -> F | Callable[[F], F]:
        """Register a tool whose first parameter is the `RunContext` (options: see `Tool`)."""
        return self._decorate(func, True, options)

    @overload
    def tool_plain(self, func: F, /) -> F: ...
    @overload
    def tool_plain(self, /, **options: Any) -> Callable[[F], F]: ...

    def tool_plain(self, func: F | None = None, /, **options: Any) -> F | Callable[[F], F]:
        """Register a tool that does not take the `RunContext` (options: see `Tool`)."""
        return self._decorate(func, False, options)

    def _decorate(self, func: F | None, takes_ctx: bool, options: dict[str, Any]) -> F | Callable[[F], F]:
        register = (self._function_toolset.tool if takes_ctx else self._function_toolset.tool_plain)(**options)
        return register(func) if func is not None else register

    @overload
    def instructions(self, func: F, /) -> F: ...
    @overload
    def instructions(self, /) -> Callable[[F], F]: ...

    def instructions(self, func: F | None = None, /) -> F | Callable[[F], F]:
        """Add an instruction function (`@cap.instructions` or `@cap.instructions()`)."""

        def register(fn: F) -> F:
            self._instructions.append(fn)
            return fn

        return register(func) if func is not None else register


def _as_list(value: CapabilityInstructions | None) -> list[str | Callable[..., object]]:
    if value is None:
        return []
    if isinstance(value, str) or callable(value):
        return [value]
    return list(value)
