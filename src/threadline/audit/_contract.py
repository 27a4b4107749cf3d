"""Prompt contracts: a non-secret identifier of the system prompt a history must carry."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

from threadline.audit._events import keyed_hash
from threadline.exceptions import UserError
from threadline.storage import AsyncStore, SyncStore

__all__ = ['PromptContract', 'keyed_hash', 'resolve_key']


def resolve_key(key: bytes | str | None, store: AsyncStore[SyncStore] | None = None) -> bytes:
    """The audit key: given, else `THREADLINE_AUDIT_KEY`, else the store's own key."""
    if isinstance(key, str):
        return key.encode()
    if key is not None:
        return key
    configured = os.environ.get('THREADLINE_AUDIT_KEY')
    if configured:
        return configured.encode()
    if store is not None:
        return store.sync.audit_key()
    raise UserError('no audit key: pass key=, set THREADLINE_AUDIT_KEY, or give the store (it keeps one)')


@dataclass(frozen=True)
class PromptContract:
    """What standing system prompt a history must carry, without carrying the prompt itself.

    `kind='system_prompt'`: the history's standing system prompt (the leading system prompt parts
    of its first request, joined by blank lines) must hash, under the audit key, to `digest`.
    `kind='dynamic_instructions'`: the app uses instructions instead; the contract holds when the
    history carries no standing system prompt that would compete with them.
    """

    name: str
    digest: str | None
    kind: Literal['system_prompt', 'dynamic_instructions', 'unchecked'] = 'system_prompt'

    @classmethod
    def for_text(
        cls, text: str, *, name: str, key: bytes | str | None = None, store: AsyncStore[SyncStore] | None = None
    ) -> PromptContract:
        return cls(name, keyed_hash(resolve_key(key, store), text, 64))

    @classmethod
    def for_agent(
        cls, agent: Any, *, name: str, key: bytes | str | None = None, store: AsyncStore[SyncStore] | None = None
    ) -> PromptContract:
        """The contract of `agent`'s static system prompt."""
        parts = [p for p in getattr(agent, '_system_prompts', []) if isinstance(p, str)]
        if not parts:
            raise UserError(
                f'agent {getattr(agent, "name", None)!r} has no static system prompt to make a contract of; use '
                'PromptContract.dynamic(name) if it relies on instructions'
            )
        return cls.for_text('\n\n'.join(parts), name=name, key=key, store=store)

    @classmethod
    def dynamic(cls, name: str) -> PromptContract:
        """The app relies on instructions (sent with every request), not a stored system prompt."""
        return cls(name, None, 'dynamic_instructions')

    @classmethod
    def unchecked(cls, name: str = 'not checked') -> PromptContract:
        """No prompt requirement: the prompt gate passes and its evidence says it was not checked
        (for a tool that audits histories without knowing the agent that wrote them)."""
        return cls(name, None, 'unchecked')
