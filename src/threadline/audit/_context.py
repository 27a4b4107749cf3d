"""`AuditContext`: what the application knows that a history alone cannot say."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from threadline.audit._contract import PromptContract
from threadline.exceptions import UserError
from threadline.storage import AsyncStore, SyncStore
from threadline.trust import Envelope, Keyring

__all__ = ['AuditContext']


@dataclass
class AuditContext:
    """The facts the six gates need besides the history.

    - `source`: `'store'` (loaded from this server's store, under `loaded_scope`) or `'client'`;
    - `store`: the store holding receipts, wait records, the ledger, fork points, provenance and
      the hash chain (required for `source='store'`);
    - `scope`: the caller's scope now; `loaded_scope`: the scope the history was loaded under
      (defaults to `scope`);
    - `conversation_id`: the conversation the caller means to continue;
    - `fork_of`: a declared fork (the conversation it branches from); `merge`: a declared merge of
      several conversations (ids may differ);
    - `resume_frontier`: the caller means to run the calls of the last response;
    - `prompt_contract`: the system prompt the agent requires (see `PromptContract`);
    - `expect_outcome`: the application expects an effect of this conversation's runs, so the
      last run owes an outcome receipt (`record_outcome`); without it, and with no receipt
      recorded and no `effect_tools` call, an ordinary answer owes none;
    - `effect_tools`: names of tools with external effects (`effect_tools_of(agent)` lists the
      ones marked `metadata={'external_effects': True}`): a run that called one owes a receipt;
    - `accepted_strengths`: receipt strengths that count as an outcome (default: a re-read of the
      destination only);
    - `progress_window`: how long after its last message a run may go without a receipt or a wait;
    - `key`: the audit key for keyed hashes (default: `THREADLINE_AUDIT_KEY` or the store's);
    - `envelope` and `keys`: a client history's signed envelope (`threadline.trust`) and the keys
      that verify it: a valid one passes the authority gate for `source='client'`;
    - `now`: the audit's clock (for tests).
    """

    source: Literal['store', 'client']
    prompt_contract: PromptContract | None = None
    store: AsyncStore[SyncStore] | None = None
    scope: str | None = None
    loaded_scope: str | None = None
    conversation_id: str | None = None
    fork_of: str | None = None
    merge: bool = False
    resume_frontier: bool = False
    expect_outcome: bool = False
    effect_tools: Collection[str] = ()
    accepted_strengths: Sequence[str] = ('outcome',)
    progress_window: timedelta | None = None
    key: bytes | str | None = None
    now: datetime | None = None
    envelope: Envelope | None = None
    keys: Keyring | None = None

    def check(self) -> None:
        """Raise `UserError` naming the first missing or contradictory field."""
        if self.source not in ('store', 'client'):
            raise UserError(f"AuditContext.source must be 'store' or 'client', not {self.source!r}")
        if self.prompt_contract is None:
            raise UserError(
                'AuditContext.prompt_contract is required: PromptContract.for_agent(...) or PromptContract.dynamic(name)'
            )
        if self.source == 'store':
            for name in ('store', 'scope', 'conversation_id'):
                if getattr(self, name) is None:
                    raise UserError(f"AuditContext.{name} is required when source='store'")
