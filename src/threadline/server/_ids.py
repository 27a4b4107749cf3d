"""Which stored conversation a client's chat id names: ids are never a client's to pick.

Rules (each tested):
- With API keys (tenants), a chat id `X` of scope `S` names the stored conversation
  `<16 hex of sha256(S)>:X`, so two tenants' equal chat ids never meet: tenant B cannot take an
  id before tenant A, and nothing a tenant does tells it whether another's id exists. Every
  answer (a listing, a hit, a fork) gives chat ids back, never the stored form.
- A conversation stored under the bare id in the caller's own scope (made with the CLI, or before
  this rule) is still found under it: the lookup is scoped, so it can only ever find the caller's.
- In dev mode (one local scope, no keys) a chat id is the stored id itself.
"""

from __future__ import annotations

import hashlib

from threadline.storage import AsyncStore, SyncStore

__all__ = ['ChatIds']


class ChatIds:
    """The mapping the module docstring describes, for one app."""

    def __init__(self, store: AsyncStore[SyncStore], *, tenants: bool) -> None:
        self.store, self.tenants = store, tenants

    @staticmethod
    def _prefix(scope: str) -> str:
        return hashlib.sha256(scope.encode()).hexdigest()[:16] + ':'

    async def stored(self, scope: str, chat_id: str) -> str:
        """The stored conversation id `chat_id` names in `scope`."""
        if not self.tenants:
            return chat_id
        if not chat_id.startswith(self._prefix(scope)) and await self.store.conversation_state(chat_id, scope=scope):
            return chat_id  # the caller's own conversation under its bare id
        return self._prefix(scope) + chat_id

    def chat(self, scope: str, stored_id: str) -> str:
        """The chat id a client knows `stored_id` of `scope` by."""
        prefix = self._prefix(scope)
        return stored_id[len(prefix) :] if self.tenants and stored_id.startswith(prefix) else stored_id
