"""The JSON of an AG-UI event, as the protocol package's `EventEncoder` writes it, built in one
pass: for `MESSAGES_SNAPSHOT`, whose thousands of message models would each run the package's
per-model serializer.

Rules (the package's, read from each model class's public pydantic fields): keys by alias
(camelCase), in field order, then any extra fields; an optional field whose default is None is
left out while it is None (a required field, or a None inside a list or dict, stays null); enums
as their values. `tests/ui/test_ag_ui_wire.py` holds the output equal to the package's.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import msgspec
from pydantic import BaseModel

__all__ = ['event_sse']

_Plan = tuple[tuple[str, str, bool], ...]
_PLANS: dict[type[BaseModel], _Plan] = {}


def event_sse(event: BaseModel) -> str:
    """`event` as one server-sent event (`data: <json>` and a blank line)."""
    return 'data: ' + msgspec.json.encode(_plain(event)).decode() + '\n\n'


def _plan(cls: type[BaseModel]) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = tuple(
            (name, field.serialization_alias or field.alias or name, not field.is_required() and field.default is None)
            for name, field in cls.model_fields.items()
        )
    return plan


def _plain(value: Any) -> Any:
    if type(value) is str:  # most values: checked first
        return value
    if isinstance(value, BaseModel):
        out: dict[str, Any] = {}
        for name, key, omittable in _plan(type(value)):
            item = getattr(value, name)
            if item is None and omittable:
                continue
            out[key] = _plain(item)
        for key, item in (value.__pydantic_extra__ or {}).items():
            out[key] = _plain(item)
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, Enum):
        return value.value
    return value
