"""Toolsets: groups of tools a run resolves at every model request, and wrappers that reshape them.

A toolset answers two questions, as pydantic-ai's do: which tools it offers for a run step
(`get_tools(ctx)`, a dict of `ToolsetTool`) and what calling one does (`call_tool(name, args,
ctx, tool)`). `FunctionToolset` holds plain functions; the wrappers filter, prefix, rename or
re-describe another toolset's tools; `CombinedToolset` joins several; `ExternalToolset` offers
tools the application runs itself (their calls end the run as `DeferredToolRequests.calls`).

Rules:
- A run asks its toolsets for their tools before each model request, with that request's
  `RunContext`, so a filter or prepare function can depend on the run's state; the calls in the
  response are run against the tools the model was offered for it.
- Names are unique across the agent's tools, its capabilities' and its toolsets': a clash is a
  `UserError` naming both sources.
- A prepare function may change a tool's description, schema or options, or drop the tool; it
  cannot add or rename one, and returning None is refused too (`UserError`s): use `renamed` to
  rename, `[]` to offer none.
- A toolset that is an async context manager (for example one holding a connection) is entered
  when the run starts and exited when it ends.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic

import msgspec

from threadline.agent._context import AgentDepsT, RunContext
from threadline.agent.tools._tool import Tool, ToolArgsError
from threadline.exceptions import CallDeferred, UserError
from threadline.models import ToolDefinition

__all__ = [
    'AbstractToolset',
    'CombinedToolset',
    'ExternalToolset',
    'FilteredToolset',
    'PrefixedToolset',
    'PreparedToolset',
    'RenamedToolset',
    'StepTools',
    'ToolsetTool',
    'WrapperToolset',
    'checked_tool_defs',
]

ToolsPrepareFunc = Callable[
    [RunContext[Any], list[ToolDefinition]], 'list[ToolDefinition] | Awaitable[list[ToolDefinition] | None] | None'
]


@dataclass
class ToolsetTool(Generic[AgentDepsT]):
    """One tool as a toolset offers it: its definition, the toolset that runs it, its retry limit,
    and how its arguments are validated (`validate(raw)` gives the keyword arguments)."""

    toolset: AbstractToolset[AgentDepsT]
    tool_def: ToolDefinition
    max_retries: int | None
    validate: Callable[[Any], dict[str, Any]]
    origin: Tool[AgentDepsT] | None = None
    """The run's own tool this stands for (`StepTools`): its argument checks still apply."""
    route: tuple[AbstractToolset[AgentDepsT], ToolsetTool[AgentDepsT]] | None = None
    """Set by `CombinedToolset`: the member that offered the tool and the tool as it offered it,
    so a call goes back through that member (a wrapper's `call_tool` included)."""


class AbstractToolset(Generic[AgentDepsT]):
    """Base class of toolsets: implement `get_tools` and `call_tool` (see the module docstring)."""

    @property
    def id(self) -> str | None:
        """A stable name for the toolset, if it has one."""
        return getattr(self, '_id', None)

    @property
    def label(self) -> str:
        """How errors name this toolset."""
        return f'{type(self).__name__} {self.id!r}' if self.id else type(self).__name__

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        """The tools offered for the step `ctx` describes, by name."""
        raise NotImplementedError(f'{type(self).__name__} must implement get_tools()')

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        """Run tool `name` with validated `tool_args`."""
        raise NotImplementedError(f'{type(self).__name__} must implement call_tool()')

    async def __aenter__(self) -> AbstractToolset[AgentDepsT]:
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        return None

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        """The toolset one run uses, asked once before it is entered: a fresh instance keeps
        per-run state apart (default: this one, shared by every run)."""
        return self

    async def for_run_step(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        """The toolset for the step `ctx` describes, asked before its tools are; one that returns
        another instance enters and exits what it swaps itself (default: this one)."""
        return self

    async def get_instructions(self, ctx: RunContext[AgentDepsT]) -> str | Sequence[str] | None:
        """How to use these tools, joined to the run's instructions at each step (default: none).
        A plain override counts as dynamic: it is placed among the rendered instructions."""
        return None

    def instruction_sources(self) -> list[str | Callable[..., object]]:
        """What this toolset adds to the instructions, as the run orders them: static strings and
        functions of the `RunContext` (default: `get_instructions` when a subclass overrides it)."""
        if type(self).get_instructions is AbstractToolset.get_instructions:
            return []
        return [self.get_instructions]

    def filtered(
        self, filter_func: Callable[[RunContext[AgentDepsT], ToolDefinition], bool | Awaitable[bool]]
    ) -> FilteredToolset[AgentDepsT]:
        """Only the tools `filter_func(ctx, tool_def)` keeps."""
        return FilteredToolset(self, filter_func)

    def prefixed(self, prefix: str) -> PrefixedToolset[AgentDepsT]:
        """The tools named `{prefix}_{name}`."""
        return PrefixedToolset(self, prefix)

    def renamed(self, name_map: dict[str, str]) -> RenamedToolset[AgentDepsT]:
        """Tools renamed by `name_map` (new name -> original name)."""
        return RenamedToolset(self, name_map)

    def prepared(self, prepare_func: ToolsPrepareFunc) -> PreparedToolset[AgentDepsT]:
        """The tool definitions as `prepare_func(ctx, tool_defs)` returns them for each step."""
        return PreparedToolset(self, prepare_func)


class WrapperToolset(AbstractToolset[AgentDepsT]):
    """A toolset that passes everything to `wrapped`; subclass it to change one thing."""

    def __init__(self, wrapped: AbstractToolset[AgentDepsT]) -> None:
        self.wrapped = wrapped

    @property
    def id(self) -> str | None:
        return self.wrapped.id

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        return await self.wrapped.get_tools(ctx)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        return await self.wrapped.call_tool(name, tool_args, ctx, tool)

    async def __aenter__(self) -> AbstractToolset[AgentDepsT]:
        await self.wrapped.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        return await self.wrapped.__aexit__(*exc_info)

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        return self._around(await self.wrapped.for_run(ctx))

    async def for_run_step(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        return self._around(await self.wrapped.for_run_step(ctx))

    async def get_instructions(self, ctx: RunContext[AgentDepsT]) -> str | Sequence[str] | None:
        return await self.wrapped.get_instructions(ctx)

    def instruction_sources(self) -> list[str | Callable[..., object]]:
        if type(self).get_instructions is not WrapperToolset.get_instructions:
            return [self.get_instructions]
        return self.wrapped.instruction_sources()

    def _around(self, adapted: AbstractToolset[AgentDepsT]) -> WrapperToolset[AgentDepsT]:
        """This wrapper around `adapted` (a shallow copy when it is not what it wraps)."""
        if adapted is self.wrapped:
            return self
        rebound = copy.copy(self)
        rebound.wrapped = adapted
        return rebound


class CombinedToolset(AbstractToolset[AgentDepsT]):
    """Several toolsets as one; a name two of them offer is a `UserError`."""

    def __init__(self, toolsets: Sequence[AbstractToolset[AgentDepsT]]) -> None:
        self.toolsets = list(toolsets)

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        merged: dict[str, ToolsetTool[AgentDepsT]] = {}
        for toolset in self.toolsets:
            for name, tool in (await toolset.get_tools(ctx)).items():
                if name in merged:
                    raise UserError(
                        f'{tool.toolset.label} defines a tool whose name conflicts with a tool from '
                        f'{merged[name].toolset.label}: {name!r}. Rename one (toolset.prefixed() or .renamed()).'
                    )
                merged[name] = replace(tool, route=(toolset, tool))
        return merged

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        member, offered = tool.route if tool.route is not None else (tool.toolset, tool)
        return await member.call_tool(name, tool_args, ctx, offered)

    async def __aenter__(self) -> AbstractToolset[AgentDepsT]:
        for toolset in self.toolsets:
            await toolset.__aenter__()
        return self

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        return self._of([await t.for_run(ctx) for t in self.toolsets])

    async def for_run_step(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        return self._of([await t.for_run_step(ctx) for t in self.toolsets])

    def instruction_sources(self) -> list[str | Callable[..., object]]:
        return [source for toolset in self.toolsets for source in toolset.instruction_sources()]

    def _of(self, members: list[AbstractToolset[AgentDepsT]]) -> CombinedToolset[AgentDepsT]:
        if all(new is old for new, old in zip(members, self.toolsets, strict=True)):
            return self
        return CombinedToolset(members)

    async def __aexit__(self, *exc_info: object) -> bool | None:
        for toolset in reversed(self.toolsets):
            await toolset.__aexit__(*exc_info)
        return None


class FilteredToolset(WrapperToolset[AgentDepsT]):
    """`wrapped`'s tools that `filter_func(ctx, tool_def)` keeps (it may be async)."""

    def __init__(
        self,
        wrapped: AbstractToolset[AgentDepsT],
        filter_func: Callable[[RunContext[AgentDepsT], ToolDefinition], bool | Awaitable[bool]],
    ) -> None:
        super().__init__(wrapped)
        self.filter_func = filter_func

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        kept = {}
        for name, tool in (await self.wrapped.get_tools(ctx)).items():
            keep = self.filter_func(ctx, tool.tool_def)
            if inspect.isawaitable(keep):
                keep = await keep
            if keep:
                kept[name] = tool
        return kept


class RenamedToolset(WrapperToolset[AgentDepsT]):
    """`wrapped`'s tools with the names `name_map` gives (new name -> original name)."""

    def __init__(self, wrapped: AbstractToolset[AgentDepsT], name_map: dict[str, str]) -> None:
        super().__init__(wrapped)
        self.name_map = dict(name_map)
        self._original_to_new = {original: new for new, original in self.name_map.items()}

    def _new_name(self, name: str) -> str:
        return self._original_to_new.get(name, name)

    def _original_name(self, name: str) -> str:
        return self.name_map.get(name, name)

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        return {
            (new := self._new_name(name)): replace(tool, toolset=self, tool_def=replace(tool.tool_def, name=new))
            for name, tool in (await self.wrapped.get_tools(ctx)).items()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        original = self._original_name(name)
        inner = replace(tool, toolset=self.wrapped, tool_def=replace(tool.tool_def, name=original))
        return await self.wrapped.call_tool(original, tool_args, ctx, inner)


class PrefixedToolset(RenamedToolset[AgentDepsT]):
    """`wrapped`'s tools named `{prefix}_{name}`."""

    def __init__(self, wrapped: AbstractToolset[AgentDepsT], prefix: str) -> None:
        super().__init__(wrapped, {})
        self.prefix = prefix

    def _new_name(self, name: str) -> str:
        return f'{self.prefix}_{name}'

    def _original_name(self, name: str) -> str:
        return name.removeprefix(f'{self.prefix}_')


class PreparedToolset(WrapperToolset[AgentDepsT]):
    """`wrapped`'s tool definitions as `prepare_func(ctx, tool_defs)` returns them each step."""

    def __init__(self, wrapped: AbstractToolset[AgentDepsT], prepare_func: ToolsPrepareFunc) -> None:
        super().__init__(wrapped)
        self.prepare_func = prepare_func

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        tools = await self.wrapped.get_tools(ctx)
        prepared = self.prepare_func(ctx, [tool.tool_def for tool in tools.values()])
        if inspect.isawaitable(prepared):
            prepared = await prepared
        name = getattr(self.prepare_func, '__qualname__', repr(self.prepare_func))
        defs = checked_tool_defs(prepared, set(tools), f'prepare function {name!r}')
        return {d.name: replace(tools[d.name], tool_def=d) for d in defs}


def checked_tool_defs(given: object, known: set[str], source: str) -> list[ToolDefinition]:
    """`given` (what a prepare function returned) as tool definitions, or a `UserError` naming
    `source` when it is None or not definitions, or adds or renames a tool (`known`: the names
    it was given)."""
    if given is None:
        raise UserError(
            f'{source} returned None: return [] to offer no tools, or the definitions it was given to keep them'
        )
    if not isinstance(given, Sequence) or not all(isinstance(d, ToolDefinition) for d in given):
        raise UserError(f'{source} must return a list of ToolDefinition, not {type(given).__name__}')
    added = sorted({d.name for d in given} - known)
    if added:
        raise UserError(
            f'{source} cannot add or rename tools (it returned {added}); use '
            'FunctionToolset.add_function() or toolset.renamed() instead'
        )
    return list(given)


class StepTools(AbstractToolset[AgentDepsT]):
    """A run step's own tools as a toolset (`tools`, set before each request), so capabilities'
    `prepare_tools` hooks and toolset wrappers work on them as on any toolset; a call goes to the
    tool, with its own argument checks, timeout and approval."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool[AgentDepsT]] = {}

    @property
    def label(self) -> str:
        return "the run's tools"

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        return {n: ToolsetTool(self, t.tool_def, t.max_retries, t.validate_args, t) for n, t in self.tools.items()}

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        return await self.tools[name].call(ctx, tool_args)


class ExternalToolset(AbstractToolset[AgentDepsT]):
    """Tools the application runs outside the agent: a call to one ends the run with
    `DeferredToolRequests.calls`, and the run resumes with `deferred_tool_results=`."""

    def __init__(self, tool_defs: Sequence[ToolDefinition], *, id: str | None = None) -> None:
        self.tool_defs = list(tool_defs)
        self._id = id

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        return {d.name: ToolsetTool(self, replace(d, kind='external'), 0, _json_args) for d in self.tool_defs}

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:

        raise CallDeferred


def _json_args(raw: object) -> dict[str, Any]:
    """Arguments checked only for being a JSON object (the application validates them)."""

    try:
        args = msgspec.json.decode(raw or '{}') if isinstance(raw, str) else (raw or {})
    except msgspec.DecodeError as exc:
        raise ToolArgsError(
            [{'type': 'json_invalid', 'loc': [], 'msg': f'Invalid JSON: {exc}', 'input': raw}]
        ) from None
    if not isinstance(args, dict):
        raise ToolArgsError([{'type': 'dict_type', 'loc': [], 'msg': 'Input should be an object', 'input': raw}])
    return args


def tool_of(name: str, toolset_tool: ToolsetTool[Any], root: AbstractToolset[Any]) -> Tool[Any]:
    """The run's view of a tool that `root.get_tools` offered: a `Tool` whose validation goes to
    the toolset and whose call goes through `root` (every wrapper's `call_tool` on the way, as in
    pydantic-ai, where the run calls the top toolset)."""
    return _ToolsetBound(name, toolset_tool, root)


class _ToolsetBound(Tool[Any]):
    """A `ToolsetTool` with the interface the tool step uses (`tool_def`, `validate_args`, `call`)."""

    def __init__(self, name: str, toolset_tool: ToolsetTool[Any], root: AbstractToolset[Any]) -> None:
        self.name = name
        self.toolset_tool, self.root = toolset_tool, root
        self.max_retries = toolset_tool.max_retries
        self.requires_approval = toolset_tool.tool_def.kind == 'unapproved'
        self.origin = toolset_tool.origin
        self.defer_loading = toolset_tool.tool_def.defer_loading
        self.takes_ctx = True
        self._tool_def = toolset_tool.tool_def
        self.prepare = self.args_validator = self.timeout = None
        self.sequential, self.metadata = toolset_tool.tool_def.sequential, toolset_tool.tool_def.metadata

    def __repr__(self) -> str:
        return f'Tool({self.name!r} from {self.toolset_tool.toolset.label})'

    def validate_args(self, args: Any) -> dict[str, Any]:
        return self.toolset_tool.validate(args)

    async def check_args(self, ctx: RunContext[Any], args: dict[str, Any]) -> None:
        if self.origin is not None:
            await self.origin.check_args(ctx, args)

    async def call(self, ctx: RunContext[Any], args: dict[str, Any]) -> Any:
        return await self.root.call_tool(self.name, args, ctx, self.toolset_tool)
