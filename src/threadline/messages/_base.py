"""The base every message, part, content item and usage record is built on.

Messages are `msgspec.Struct`s: typed, slotted values that msgspec decodes from and encodes to
JSON in C, which is what lets a 10k-message history load about as fast as `orjson.loads` parses
it. On top of that, this module makes them behave like the dataclasses the documents describe:

- `dataclasses.replace(obj, field=...)`, `dataclasses.fields(obj)` and `dataclasses.is_dataclass`
  work, through a `__dataclass_fields__` mapping the metaclass builds for a public class the first
  time it is asked for (`install_dataclass_shim`);
- a class can accept constructor keywords that differ from its stored attributes
  (`_init_aliases`), handled by the metaclass, so decoding (which bypasses `__call__`) pays nothing;
- pydantic validates and serializes them with Threadline's own JSON form when they appear in a
  user's model or a `TypeAdapter` (`__get_pydantic_core_schema__`, imported lazily).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler
    from pydantic_core import CoreSchema

__all__ = ['LEGACY_PREFIX', 'LegacyName', 'MessageMeta', 'WireStruct', 'install_dataclass_shim', 'legacy_field']

LEGACY_PREFIX = '_legacy_'
"""Attribute prefix of the decode-only fields that catch a legacy wire name (see `LegacyName`)."""


class LegacyName:
    """The type of a decode-only field that catches a legacy wire name (`vendor_id`,
    `request_tokens`, ...) so the fast decoder notices it.

    No value ever decodes into it (`_codec.dec_hook` refuses), so a message that uses a legacy
    name as a key fails the fast typed decode and goes to the careful loader, which renames it.
    A value that merely equals a legacy name costs nothing, and there is no pre-scan of the
    document. The field's default is UNSET, so it is never encoded, compared or shown.
    """


def legacy_field(wire_name: str) -> Any:
    """A decode-only field catching the legacy key `wire_name`; name it `_legacy_<wire_name>`."""
    return msgspec.field(default=msgspec.UNSET, name=wire_name)


class MessageMeta(msgspec.StructMeta):
    """Metaclass that renames constructor keywords listed in a class's `_init_aliases`, and builds
    a class's `__dataclass_fields__` on first use (building them at import would cost ~15 ms)."""

    def __getattr__(cls, name: str) -> Any:
        if name == '__dataclass_fields__' and not cls.__name__.startswith('_'):
            install_dataclass_shim(cls)  # type: ignore[arg-type]
            return cls.__dict__['__dataclass_fields__']
        raise AttributeError(name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        tag_field = cls.__struct_config__.tag_field
        if tag_field is not None and tag_field in kwargs and kwargs[tag_field] == cls.__struct_config__.tag:
            del kwargs[tag_field]  # `dataclasses.replace` passes the tag back, as `asdict` shows it
        aliases: dict[str, str] = getattr(cls, '_init_aliases', None) or {}
        for public, stored in aliases.items():
            if public in kwargs:
                kwargs[stored] = kwargs.pop(public)
        return super().__call__(*args, **kwargs)


class _PydanticSerializer:
    """`__pydantic_serializer__`, built per class on first use: `pydantic_core.to_jsonable_python`
    and `to_json` then write a message (or a list of them, or one inside a user's dict) in
    Threadline's wire form, as the documents' persistence examples do."""

    def __get__(self, obj: object, cls: type) -> Any:

        from pydantic_core import SchemaSerializer

        from threadline.messages._pydantic import struct_core_schema

        serializer = SchemaSerializer(struct_core_schema(cls))
        type.__setattr__(cls, '__pydantic_serializer__', serializer)
        return serializer


class WireStruct(msgspec.Struct, metaclass=MessageMeta, repr_omit_defaults=True, gc=False):
    """Base of every wire type: value equality, readable repr without default fields.

    Decoding ignores fields a type does not declare (a newer writer's additions), as the careful
    loader does; the legacy names that must be renamed, not dropped, are declared as decode-only
    fields that never decode (`LegacyName`), which sends their message to the careful loader.

    Instances are not tracked by the garbage collector (`gc=False`): a loaded history of 10,000
    messages then adds no tracked objects of its own beyond its lists and dicts, so loading it no
    longer triggers full collections over the application's heap (~100 ms each with a large heap).
    The rule this relies on: a message never holds, through its content, the object that holds
    it. A cycle through a message (a message put inside its own tool-return content) would not be
    collected; it is never built by Threadline."""

    _init_aliases: ClassVar[dict[str, str] | None] = None
    __pydantic_serializer__: ClassVar[Any] = _PydanticSerializer()

    def __replace__(self, **changes: Any) -> Any:
        """Support `copy.replace` (Python 3.13+) the same way `dataclasses.replace` is supported."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:

        from threadline.messages._pydantic import struct_core_schema

        return struct_core_schema(cls)


def install_dataclass_shim(cls: type[msgspec.Struct]) -> None:
    """Give a struct class the `__dataclass_fields__` that `dataclasses.replace` and friends read.

    The fields are those of a keyword-only dataclass with the same public names and defaults, so
    `replace` rebuilds the object through the struct's own constructor. Stored attributes renamed
    by `_init_aliases` appear under their public names.
    """
    aliases: dict[str, str] = getattr(cls, '_init_aliases', None) or {}
    public_for = {stored: public for public, stored in aliases.items()}
    specs: list[tuple[str, Any, Any]] = []
    for info in msgspec.structs.fields(cls):
        if info.name.startswith(LEGACY_PREFIX):
            continue  # decode-only: never a constructor keyword
        if info.default is not msgspec.NODEFAULT:
            spec = dataclasses.field(default=info.default)
        elif info.default_factory is not msgspec.NODEFAULT:
            spec = dataclasses.field(default_factory=info.default_factory)
        else:
            spec = dataclasses.field()
        specs.append((public_for.get(info.name, info.name), Any, spec))
    config = cls.__struct_config__
    if config.tag_field is not None and isinstance(config.tag, str):  # `part_kind`, `kind`: part of the value
        # Where pydantic-ai's dataclass declares it (`asdict` order): after `_tag_after`, else last.
        after = getattr(cls, '_tag_after', None)
        names = [name for name, _, _ in specs]
        at = names.index(after) + 1 if after in names else len(specs)
        specs.insert(at, (config.tag_field, Any, dataclasses.field(default=config.tag)))
    shadow = dataclasses.make_dataclass(cls.__name__, specs, kw_only=True)
    cls.__dataclass_fields__ = shadow.__dataclass_fields__  # type: ignore[attr-defined]
