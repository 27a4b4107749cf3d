"""`async with provider:`: the HTTP client a provider made is closed when the last block that
entered it ends.

Rules (pydantic-ai 2.62's):
- Entering counts: only the exit that matches the first entry closes the client, so a provider
  shared by several models or agents stays open while any of them is inside its block.
- A client the application passed in (`http_client=`) is the application's: it is never closed.
- A closed provider is usable again: it makes a new client, as it did when it was built.
- An exit without an entry does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

__all__ = ['ClientLifecycle']


class ClientLifecycle:
    """The base of the providers: `client`, made by `_open_client`, closed by `__aexit__`."""

    client: Any
    _make_client: Callable[[], object]
    _owns_client: bool
    _entered: int

    def _open_client(self, make_client: Callable[[], object], *, owned: bool) -> None:
        self._make_client, self._owns_client, self._entered = make_client, owned, 0
        self.client = make_client()

    async def _close_client(self, client: Any) -> None:
        await client.close()

    async def __aenter__(self) -> Self:
        self._entered += 1
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        if self._entered == 0:
            return None
        self._entered -= 1
        if self._entered == 0 and self._owns_client:
            closing, self.client = self.client, self._make_client()
            await self._close_client(closing)
        return None
