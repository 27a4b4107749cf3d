"""Tools as they go out with their return schemas (`include_return_schema`), as pydantic-ai 2.62
sends them."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace

from threadline.models import ModelProfile, ToolDefinition

__all__ = ['with_return_schemas']


def with_return_schemas(tools: list[ToolDefinition], profile: ModelProfile) -> list[ToolDefinition]:
    """Tools as they go out with their return schemas (pydantic-ai 2.62's rules): a tool that did
    not opt in sends none; one that did, but whose return says nothing (no annotation, None), sends
    none and warns; otherwise the schema stays a field where the provider has one (Gemini), else
    it is appended to the description as JSON."""
    out = []
    for tool in tools:
        if not tool.include_return_schema:
            tool = replace(tool, return_schema=None) if tool.return_schema is not None else tool
        elif not tool.return_schema:
            warnings.warn(
                f'Tool {tool.name!r} has `include_return_schema` enabled but no meaningful return schema was '
                'generated. Set `include_return_schema=False` on this tool to suppress this warning.',
                UserWarning,
                stacklevel=2,
            )
        elif not profile.supports_tool_return_schema:
            text = json.dumps(tool.return_schema, indent=2)
            parts = [p for p in (tool.description, 'Return schema:', text) if p]
            tool = replace(tool, description='\n\n'.join(parts), return_schema=None)
        out.append(tool)
    return out
