"""JSON schemas of tool arguments as pydantic-ai 2.62 offers them to a model, and the one shape of
arguments that is not an object keyed by parameter name: a lone model-like parameter.

Rules (each checked against the reference in `tests/compat/test_tool_schemas.py`):
1. Property titles go (pydantic writes one per field, and it only repeats the name); every other
   title stays, so a model or dataclass reached from the arguments keeps its name in `$defs`.
2. A function whose only argument (besides a `RunContext`) is a pydantic model, a dataclass or a
   TypedDict takes that type's own schema: the model fills in its fields at the top level, not
   inside `{"<parameter>": ...}`. A default makes it `{"$ref": ..., "default": ...}`, as pydantic
   writes a field with a default. The type's docstring describes the tool when nothing else does.
3. Such arguments are accepted unwrapped, and also wrapped as `{"<parameter>": {...}}` when that
   is not itself a valid unwrapped value (a record of earlier validated arguments, say).
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any

import typing_extensions

__all__ = ['SingleArgument', 'drop_property_titles', 'is_model_like']


def is_model_like(annotation: Any) -> bool:
    """A class whose JSON schema is an object of named fields: a pydantic model, a dataclass, a
    TypedDict (not a parametrised alias such as `list[int]`)."""
    import pydantic

    if not isinstance(annotation, type) or isinstance(annotation, types.GenericAlias):
        return False
    return (
        issubclass(annotation, pydantic.BaseModel)
        or dataclasses.is_dataclass(annotation)
        or typing_extensions.is_typeddict(annotation)  # the stdlib's misses typing_extensions' TypedDicts
        or bool(getattr(annotation, '__is_model_like__', False))
    )


def drop_property_titles(schema: Any) -> Any:
    """`schema` without the `title` of each property (rule 1), at every depth."""
    if isinstance(schema, list):
        return [drop_property_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == 'properties' and isinstance(value, dict):
            out[key] = {
                name: drop_property_titles(
                    {k: v for k, v in sub.items() if k != 'title'} if isinstance(sub, dict) else sub
                )
                for name, sub in value.items()
            }
        else:
            out[key] = drop_property_titles(value)
    return out


_NO_DEFAULT: Any = object()


class SingleArgument:
    """The schema and the validation of a lone model-like parameter `name` (rules 2 and 3)."""

    def __init__(self, name: str, annotation: Any, default: Any = _NO_DEFAULT) -> None:
        import pydantic

        self.name = name
        self.adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(annotation)
        schema = drop_property_titles(self.adapter.json_schema())
        if default is not _NO_DEFAULT:
            schema = _with_default(schema, self.adapter.dump_python(default, mode='json'))
        self.schema: dict[str, Any] = schema
        self._keys = set(schema.get('properties', ()))

    def validate(self, args: str | dict[str, Any] | None, *, partial: bool = False) -> dict[str, Any]:
        """`{name: value}`; raises `pydantic.ValidationError` (bad JSON included). `partial`: the
        arguments are still streaming (truncated JSON, a last item cut short)."""
        import pydantic

        value: Any = args or {}
        if isinstance(args, str) and args:
            value = pydantic.TypeAdapter(Any).validate_json(
                args, experimental_allow_partial='trailing-strings' if partial else 'off'
            )
        wrapped = isinstance(value, dict) and list(value) == [self.name]
        if not wrapped:
            return {self.name: self.adapter.validate_python(value, experimental_allow_partial=partial)}
        if self.name not in self._keys:
            return {self.name: self.adapter.validate_python(value[self.name], experimental_allow_partial=partial)}
        try:  # the parameter's name is also a field: unwrapped input, unless that fails
            return {self.name: self.adapter.validate_python(value, experimental_allow_partial=partial)}
        except pydantic.ValidationError:
            return {self.name: self.adapter.validate_python(value[self.name], experimental_allow_partial=partial)}


def _with_default(schema: dict[str, Any], default: Any) -> dict[str, Any]:
    """A model's inline schema as pydantic writes a field of that model with a default: the model
    moves into `$defs` under its title and the top level refers to it."""
    defs = dict(schema.get('$defs', {}))
    body = {key: value for key, value in schema.items() if key != '$defs'}
    title = str(body.get('title', 'Model'))
    defs[title] = body
    return {'$defs': defs, '$ref': f'#/$defs/{title}', 'default': default}
