"""The tools a run's capabilities give it (`CapabilityChain.toolsets` / `.step_toolsets`).

Rules:
- a capability's `get_toolset()` may be any toolset; a `CombinedToolset` counts as its members;
- function toolsets join the agent's own tools once, at run start, named by the capability (a
  name two of them share is a `UserError` naming both); a deferred capability's are marked as
  its own, and the `load_capability` tool is added while any capability is deferred;
- every other toolset is asked for its tools at each step, beside the agent's `toolsets=`; a
  deferred capability may not have one (a `UserError`), as loading reveals function tools only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from threadline.agent._capability import AbstractCapability
from threadline.agent.tools._function import FunctionToolset
from threadline.agent.tools._load import load_tool
from threadline.agent.tools._toolsets import AbstractToolset, CombinedToolset
from threadline.exceptions import UserError

__all__ = ['function_toolsets', 'instruction_toolsets', 'step_toolsets']

D = TypeVar('D')


def function_toolsets(
    capabilities: Sequence[AbstractCapability[D]], deferred: dict[str, AbstractCapability[D]]
) -> list[tuple[str, FunctionToolset[D]]]:
    """Each capability's function tools, named by the capability that gives them; with deferred
    capabilities, their tools marked as theirs and the `load_capability` tool."""
    named = []
    tools_of: dict[str, list[str]] = {}
    for capability in capabilities:
        toolset = _function_part(capability.get_toolset())
        if toolset is None:
            continue
        if capability.defer_loading:
            assert capability.id is not None  # check_deferred refused it otherwise
            toolset = toolset.owned_by(capability.id)
            tools_of[capability.id] = list(toolset.tools)
        named.append((f'capability {type(capability).__name__}', toolset))
    if deferred:
        named.append(('deferred capability loading', FunctionToolset([load_tool(deferred, tools_of)])))
    return named


def step_toolsets(capabilities: Sequence[AbstractCapability[D]]) -> list[AbstractToolset[D]]:
    """The capabilities' toolsets that are not function toolsets, in the chain's order."""
    found: list[AbstractToolset[D]] = []
    for capability in capabilities:
        others = [t for t in _leaves(capability.get_toolset()) if not isinstance(t, FunctionToolset)]
        if others and capability.defer_loading:
            raise UserError(
                f'{type(capability).__name__} has defer_loading=True and a toolset that is not a '
                'FunctionToolset: a deferred capability can only give function tools'
            )
        found.extend(others)
    return found


def instruction_toolsets(capabilities: Sequence[AbstractCapability[D]]) -> list[AbstractToolset[D]]:
    """Every toolset the capabilities give, in the chain's order, whose instructions join the
    run's (a deferred capability's are left out: its tools are hidden until it is loaded)."""
    return [leaf for c in capabilities if not c.defer_loading for leaf in _leaves(c.get_toolset())]


def _leaves(toolset: AbstractToolset[D] | None) -> list[AbstractToolset[D]]:
    if toolset is None:
        return []
    if isinstance(toolset, CombinedToolset):
        return [leaf for member in toolset.toolsets for leaf in _leaves(member)]
    return [toolset]


def _function_part(toolset: AbstractToolset[D] | None) -> FunctionToolset[D] | None:
    """The function tools of `toolset` (a `CombinedToolset`'s function members, merged)."""
    functions = [t for t in _leaves(toolset) if isinstance(t, FunctionToolset)]
    if len(functions) <= 1:
        return functions[0] if functions else None
    merged: FunctionToolset[D] = FunctionToolset()
    for member in functions:
        for tool in member.tools.values():
            merged.add_tool(tool)
    return merged
