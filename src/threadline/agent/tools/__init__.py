"""Tools and toolsets: how a function becomes a tool, how a run's tools are gathered each step,
and how one model response's tool calls are executed.

Public names are exported from `threadline.agent` and `threadline.toolsets`; this module names
what sibling packages build tools and capabilities from (`Tool`, `FunctionToolset`,
`takes_run_context`) and the toolset classes `threadline.toolsets` re-exports.
"""

from __future__ import annotations

from threadline.agent.tools._dynamic import DynamicToolset, ToolsetFunc, as_toolset
from threadline.agent.tools._function import FunctionToolset
from threadline.agent.tools._load import LOAD_KIND
from threadline.agent.tools._tool import Tool, ToolArgsError, takes_run_context
from threadline.agent.tools._toolsets import (
    AbstractToolset,
    CombinedToolset,
    ExternalToolset,
    FilteredToolset,
    PrefixedToolset,
    PreparedToolset,
    RenamedToolset,
    ToolsetTool,
    WrapperToolset,
)

__all__ = [
    'LOAD_KIND',
    'AbstractToolset',
    'CombinedToolset',
    'DynamicToolset',
    'ExternalToolset',
    'FilteredToolset',
    'FunctionToolset',
    'PrefixedToolset',
    'PreparedToolset',
    'RenamedToolset',
    'Tool',
    'ToolArgsError',
    'ToolsetFunc',
    'ToolsetTool',
    'WrapperToolset',
    'as_toolset',
    'takes_run_context',
]
