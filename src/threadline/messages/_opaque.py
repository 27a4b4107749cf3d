"""Opaque stand-ins for parts and content items written by a newer pydantic-ai or Threadline.

A history must keep loading when a newer writer adds a part kind this version does not know.
Such a part is kept verbatim, written back unchanged, and skipped (with one warning per run)
when the history is rendered for a model.
"""

from __future__ import annotations

from typing import Any

__all__ = ['OpaqueContent', 'OpaquePart']


class _Opaque:
    __slots__ = ('data',)
    _tag_key = ''

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.data == self.data

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f'{type(self).__name__}({self.data!r})'


class OpaquePart(_Opaque):
    """A message part of a kind this version does not know, kept as the dict it was loaded from."""

    __slots__ = ()

    @property
    def part_kind(self) -> str:
        return str(self.data.get('part_kind'))


class OpaqueContent(_Opaque):
    """A user content item of a kind this version does not know, kept as the dict it was loaded from."""

    __slots__ = ()

    @property
    def kind(self) -> str:
        return str(self.data.get('kind'))
