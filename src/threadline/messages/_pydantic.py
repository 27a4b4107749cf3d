"""How pydantic validates and serializes Threadline's wire types (imported only when pydantic asks).

A field typed `list[ModelMessage]` in a user's model, or `TypeAdapter(list[ModelMessage])`, then
reads and writes exactly Threadline's JSON form, and loading errors name the offending field.
"""

from __future__ import annotations

from typing import Any

import msgspec
from pydantic_core import core_schema

__all__ = ['struct_core_schema']


def struct_core_schema(cls: type) -> core_schema.CoreSchema:

    from threadline.messages._adapter import to_python
    from threadline.messages._codec import enc_hook, load_struct

    def validate(value: Any) -> Any:
        return load_struct(cls, value, cls.__name__)

    def serialize(value: Any, info: core_schema.SerializationInfo) -> Any:
        if info.mode_is_json():
            return msgspec.to_builtins(value, enc_hook=enc_hook)
        return to_python(value)

    return core_schema.no_info_plain_validator_function(
        validate,
        serialization=core_schema.plain_serializer_function_ser_schema(serialize, info_arg=True),
    )
