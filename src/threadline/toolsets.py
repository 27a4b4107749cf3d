"""Toolsets, at the import path the documents use (`from threadline.toolsets import FunctionToolset`).

A toolset is a group of tools a capability gives a run (`AbstractCapability.get_toolset`).
"""

from __future__ import annotations

from ._public import publish
from .agent._toolset import FunctionToolset

__all__ = ['FunctionToolset']

publish(__name__, globals(), __all__)  # after every name above exists
