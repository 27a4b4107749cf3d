"""The type of JSON data: what a provider's request body, a JSON schema or a tool's arguments are
made of, stated precisely rather than as `Any`.

Values are read through covariant `Sequence` and `Mapping`, so a `list[JSONObject]` fits where a
JSON value goes; objects a caller builds are plain `dict`s (`JSONObject`), mutable where they are
made. Reading a value back means narrowing it (`isinstance(value, dict)`), which is the point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias, Union

__all__ = ['JSONObject', 'JSONValue']

JSONValue: TypeAlias = Union[str, int, float, bool, Sequence['JSONValue'], Mapping[str, 'JSONValue'], None]  # noqa: UP007
"""Any JSON value (text, number, boolean, null, array, object)."""

JSONObject: TypeAlias = dict[str, JSONValue]
"""A JSON object being built or read: text keys, JSON values."""
