"""Walking a tool's JSON schema to adapt it for one provider (see `_strict`, and `google`).

`walk_schema` visits every subschema the way pydantic-ai 2.62's schema transformers do, so the
same tool comes out the same: object keywords only under `type: object`, array keywords only
under `type: array`, union members always, a union of one member folded into its parent, and each
definition under `$defs` / `definitions`. `transform` is called on every node, children first,
and returns the node to keep.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

__all__ = ['json_type_of', 'walk_schema']

Transform = Callable[[dict[str, Any]], dict[str, Any]]


def walk_schema(schema: dict[str, Any], transform: Transform) -> dict[str, Any]:
    """A transformed copy of `schema` (the input is left as it was)."""
    out: dict[str, Any] = _node(copy.deepcopy(schema), transform)
    for key in ('$defs', 'definitions'):
        if isinstance(out.get(key), dict):
            out[key] = {name: _node(value, transform) for name, value in out[key].items()}
    return out


def _node(schema: Any, transform: Transform) -> Any:
    if not isinstance(schema, dict):
        return schema
    kind = schema.get('type')
    if kind == 'object':
        for key in ('properties', 'patternProperties'):
            if isinstance(schema.get(key), dict):
                schema[key] = {name: _node(value, transform) for name, value in schema[key].items()}
        if isinstance(schema.get('additionalProperties'), dict):
            schema['additionalProperties'] = _node(schema['additionalProperties'], transform)
    elif kind == 'array':
        if isinstance(schema.get('prefixItems'), list):
            schema['prefixItems'] = [_node(item, transform) for item in schema['prefixItems']]
        items = schema.get('items')
        if isinstance(items, list):
            schema['items'] = [_node(item, transform) for item in items]
        elif items:
            schema['items'] = _node(items, transform)
    for union in ('allOf', 'anyOf', 'oneOf'):
        if isinstance(schema.get(union), list):
            members = [_node(member, transform) for member in schema[union]]
            if kind is None and len(members) == 1 and isinstance(members[0], dict) and members[0].get('not') != {}:
                # A union of one is that one schema (its siblings kept).
                schema = members[0] | {key: value for key, value in schema.items() if key != union}
            else:
                schema[union] = members
    return transform(schema)


def json_type_of(value: object) -> str | None:
    """The JSON schema `type` of a scalar (for a `const` rewritten as a typed one-value `enum`)."""
    if isinstance(value, bool):  # before int, which bool subclasses
        return 'boolean'
    if isinstance(value, int):
        return 'integer'
    if isinstance(value, float):
        return 'number'
    return 'string' if isinstance(value, str) else None
