"""Turn leases on SQL: one row per (scope, conversation), taken by an upsert that only replaces an
expired lease or the claimant's own (see `TurnLeases` for the rules)."""

from __future__ import annotations

import time

from threadline.exceptions import UserError
from threadline.storage.sql._base import SQLBase

__all__ = ['LeaseOps', 'check_ttl']


def check_ttl(ttl: object) -> float:
    """`ttl` as seconds, or a UserError naming it."""
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl <= 86_400:
        raise UserError(f'ttl must be a number of seconds between 0 and 86400, not {ttl!r}')
    return float(ttl)


class LeaseOps(SQLBase):
    """The lease half of the contract. The upsert's condition is evaluated inside the write
    transaction, so of two claimants racing for a free lease exactly one gets it."""

    def claim_turn(self, conversation_id: str, *, scope: str, holder: str, ttl: float) -> bool:
        now = time.time()
        until = now + check_ttl(ttl)
        with self._write(durable=False) as conn:
            self._exec(
                conn,
                'INSERT INTO turn_leases (scope, conversation_id, holder, expires_at) VALUES (?, ?, ?, ?) '
                'ON CONFLICT (scope, conversation_id) DO UPDATE SET holder = excluded.holder, '
                'expires_at = excluded.expires_at '
                'WHERE turn_leases.expires_at < ? OR turn_leases.holder = excluded.holder',
                (scope, conversation_id, holder, until, now),
            )
            row = self._one(
                conn,
                'SELECT holder FROM turn_leases WHERE scope = ? AND conversation_id = ?',
                (scope, conversation_id),
            )
        return row is not None and row[0] == holder

    def release_turn(self, conversation_id: str, *, scope: str, holder: str) -> None:
        with self._write(durable=False) as conn:
            self._exec(
                conn,
                'DELETE FROM turn_leases WHERE scope = ? AND conversation_id = ? AND holder = ?',
                (scope, conversation_id, holder),
            )
