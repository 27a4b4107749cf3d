"""`effect_tools_of`: the tools an agent marks as having external effects, for the outcome gate."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ['EFFECTS_KEY', 'effect_tools_of']

EFFECTS_KEY = 'external_effects'
"""The tool metadata key that marks a tool as changing something outside the conversation
(`@agent.tool(metadata={'external_effects': True})`); it works the same on a pydantic-ai tool."""


def effect_tools_of(agent: Any) -> frozenset[str]:
    """Names of `agent`'s function tools whose metadata carries `external_effects: True`.

    Reads Threadline's `Agent` and pydantic-ai's (duck-typed, so neither is imported). Tools from
    other toolsets (MCP, external) are not listed: name them in `AuditContext.effect_tools`."""
    return frozenset(name for name, tool in _tools(agent) if (getattr(tool, 'metadata', None) or {}).get(EFFECTS_KEY))


def _tools(agent: Any) -> Iterable[tuple[str, Any]]:
    own = getattr(agent, '_tools', None)
    if isinstance(own, dict):
        yield from own.items()
    toolset = getattr(agent, '_function_toolset', None)  # pydantic-ai's Agent keeps its tools here
    tools = getattr(toolset, 'tools', None)
    if isinstance(tools, dict):
        yield from tools.items()
