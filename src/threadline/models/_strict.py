"""OpenAI's strict mode for tool schemas: which schemas it accepts, and the form it wants them in.

With `"strict": true` on a tool definition the model's arguments always match the schema, but the
API then accepts only a subset of JSON Schema. `strict_tool_schema` walks a tool's schema once and
returns the schema to send together with the `strict` flag to send:

- `strict=None` (the tool did not choose): the flag is `True` exactly when the schema already fits
  strict mode, and the schema is only tidied (the rules marked *always* below);
- `strict=True`: the schema is rewritten to fit (defaults dropped, every property required,
  unsupported keywords moved into the description); an untyped array cannot be rewritten and is
  refused with `UserError`;
- `strict=False`: the flag is left off and the schema is only tidied.

Rules, applied to every subschema:
- *always*: `title`, `$schema` and `discriminator` are removed; an object gets `properties` if it
  has none; a `$ref` with sibling keywords becomes `anyOf: [{"$ref": ...}]` (strict mode allows no
  siblings beside `$ref`); a reference to the root definition becomes `#`;
- a `default` is not allowed; `oneOf` is not allowed (rewritten as `anyOf`);
- the keywords in `_INCOMPATIBLE`, a string `format` outside `_FORMATS` and a `pattern` with
  look-around are not allowed;
- an object must list every property in `required` and must not allow additional properties
  (`additionalProperties: false` is set when it says nothing);
- an array must type its `items`;
- a `$ref` must point at `#` or a top-level definition.

These follow the rules pydantic-ai 2.62 applies for OpenAI, so the same tool gets the same flag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from threadline.exceptions import UserError
from threadline.models._schema_walk import walk_schema

__all__ = ['strict_tool_schema']

_INCOMPATIBLE = (
    'patternProperties',
    'unevaluatedProperties',
    'propertyNames',
    'minProperties',
    'maxProperties',
    'unevaluatedItems',
    'contains',
    'minContains',
    'maxContains',
    'uniqueItems',
)
_FORMATS = frozenset({'date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid'})
_LOOKAROUND = re.compile(r'(?<!\\)\(\?(?:=|!|<=|<!)')
_TYPED = ('type', '$ref', 'anyOf', 'oneOf', 'allOf', 'enum', 'const')
_DEFINITION_REF = re.compile(r'#/(\$defs|definitions)/[^/]+')


def strict_tool_schema(schema: dict[str, Any], strict: bool | None) -> tuple[dict[str, Any], bool | None]:
    """The schema to send for a tool and its `strict` flag (None: leave the flag off)."""
    walk = _Walk(strict, schema.get('$ref'))
    if walk.root_ref is not None and (definition := _definition(schema, walk.root_ref)) is not None:
        # A recursive model's schema is a `$ref` to its own definition: inline the definition at
        # the root, and let references to it point at `#`.
        schema = {key: value for key, value in schema.items() if key != '$ref'} | definition
    out = walk_schema(schema, walk.transform)
    if strict is None:
        return out, True if walk.compatible else None
    return out, True if strict else None


def _definition(schema: dict[str, Any], ref: str) -> dict[str, Any] | None:
    match = _DEFINITION_REF.fullmatch(ref)
    if not match:
        return None
    name = ref.split('/', 2)[2].replace('~1', '/').replace('~0', '~')
    found = schema.get(match.group(1), {}).get(name)
    return found if isinstance(found, dict) else None


@dataclass
class _Walk:
    strict: bool | None
    root_ref: str | None
    compatible: bool = True

    def _refuse(self) -> None:
        """Strict mode will not take this node: with `strict=None` the tool goes without the flag."""
        if self.strict is None:
            self.compatible = False

    def transform(self, schema: dict[str, Any]) -> dict[str, Any]:
        for key in ('title', '$schema', 'discriminator'):
            schema.pop(key, None)
        if 'default' in schema:
            if self.strict:
                schema.pop('default')
            else:
                self._refuse()
        self._reference(schema)
        self._keywords(schema)
        if 'oneOf' in schema:
            if self.strict:
                schema['anyOf'] = schema.pop('oneOf')
            else:
                self._refuse()
        if schema.get('type') == 'object':
            self._object(schema)
        if schema.get('type') == 'array':
            self._array(schema)
        return schema

    def _reference(self, schema: dict[str, Any]) -> None:
        ref = schema.get('$ref')
        if not isinstance(ref, str):
            return
        if ref == self.root_ref:
            schema['$ref'] = '#'
        elif ref.startswith('#/') and not _DEFINITION_REF.fullmatch(ref):
            self._refuse()
        if len(schema) > 1:
            schema['anyOf'] = [{'$ref': schema.pop('$ref')}]

    def _keywords(self, schema: dict[str, Any]) -> None:
        found = {key: schema[key] for key in _INCOMPATIBLE if key in schema}
        if (fmt := schema.get('format')) and fmt not in _FORMATS:
            found['format'] = fmt
        if isinstance(pattern := schema.get('pattern'), str) and _LOOKAROUND.search(pattern):
            found['pattern'] = pattern
        if not found:
            return
        if not self.strict:
            self._refuse()
            return
        notes = ', '.join(f'{key}={schema.pop(key)}' for key in found)
        description = schema.get('description')
        schema['description'] = f'{description} ({notes})' if description else notes

    def _object(self, schema: dict[str, Any]) -> None:
        properties = schema.setdefault('properties', {})
        if self.strict:
            schema['additionalProperties'] = False
            schema['required'] = list(properties)
            return
        if self.strict is False:
            return
        if schema.get('additionalProperties') not in (None, False):
            self._refuse()
        else:
            schema['additionalProperties'] = False
        required = schema.get('required')
        if required is None or any(name not in required for name in properties):
            self._refuse()

    def _array(self, schema: dict[str, Any]) -> None:
        items = schema.get('items')
        if (isinstance(items, dict) and any(key in items for key in _TYPED)) or schema.get('prefixItems'):
            return
        if self.strict:
            raise UserError(
                "OpenAI strict mode needs the type of an array's items, but this tool has an untyped array (a bare "
                '`list`): give it a type parameter, such as `list[str]`, or pass strict=False for the tool'
            )
        self._refuse()
