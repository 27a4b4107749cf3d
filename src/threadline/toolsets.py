"""Toolsets, at the import path the documents use (`from threadline.toolsets import FunctionToolset`).

A toolset is a group of tools: a capability gives one to every run (`AbstractCapability.get_toolset`),
and `Agent(toolsets=[...])` / `run(toolsets=[...])` add them to a run, resolved at each model request
(see `threadline.agent.tools._toolsets` for the rules).
"""

from __future__ import annotations

from threadline._public import publish
from threadline.agent.tools import (
    AbstractToolset,
    CombinedToolset,
    DynamicToolset,
    ExternalToolset,
    FilteredToolset,
    FunctionToolset,
    PrefixedToolset,
    PreparedToolset,
    RenamedToolset,
    ToolsetFunc,
    ToolsetTool,
    WrapperToolset,
)

__all__ = [
    'AbstractToolset',
    'CombinedToolset',
    'DynamicToolset',
    'ExternalToolset',
    'FilteredToolset',
    'FunctionToolset',
    'PrefixedToolset',
    'PreparedToolset',
    'RenamedToolset',
    'ToolsetFunc',
    'ToolsetTool',
    'WrapperToolset',
]

publish(__name__, globals(), __all__)  # after every name above exists
