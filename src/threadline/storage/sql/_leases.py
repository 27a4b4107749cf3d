"""Turn leases on SQL: one row per (scope, conversation) in `turn_leases`, taken by an upsert that
only replaces an expired lease or the claimant's own, and a line of waiting claimants in
`turn_queue` whose tickets keep their arrival order (see `TurnLeases` for the rules)."""

from __future__ import annotations

import time

from threadline.exceptions import UserError
from threadline.storage._contract import TURN_PATIENCE
from threadline.storage.sql._base import SQLBase
from threadline.storage.sql._dialect import Connection

__all__ = ['LeaseOps', 'check_ttl']


def check_ttl(ttl: object, name: str = 'ttl') -> float:
    """`ttl` as seconds, or a UserError naming it (as `name`)."""
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl <= 86_400:
        raise UserError(f'{name} must be a number of seconds between 0 and 86400, not {ttl!r}')
    return float(ttl)


class LeaseOps(SQLBase):
    """The lease half of the contract. Every step runs in one write transaction, and the lease is
    taken by an upsert whose condition is evaluated inside it, so of two claimants racing for a
    free lease exactly one gets it; the line (`turn_queue`, ordered by ticket) says who may try."""

    def claim_turn(
        self, conversation_id: str, *, scope: str, holder: str, ttl: float, patience: float = TURN_PATIENCE
    ) -> bool:
        now = time.time()
        until, seen_until = now + check_ttl(ttl), now + check_ttl(patience, 'patience')
        key = (scope, conversation_id)
        with self._write(durable=False) as conn:
            self._exec(
                conn, 'DELETE FROM turn_queue WHERE scope = ? AND conversation_id = ? AND seen_until < ?', (*key, now)
            )
            lease = self._one(
                conn, 'SELECT holder, expires_at FROM turn_leases WHERE scope = ? AND conversation_id = ?', key
            )
            if lease is not None and lease[0] != holder and lease[1] >= now:
                return self._wait_in_line(conn, key, holder, seen_until)
            if lease is None or lease[0] != holder:
                first = self._one(
                    conn,
                    'SELECT holder FROM turn_queue WHERE scope = ? AND conversation_id = ? ORDER BY ticket LIMIT 1',
                    key,
                )
                if first is not None and first[0] != holder:
                    return self._wait_in_line(conn, key, holder, seen_until)
            if not self._take(conn, key, holder, until, now):
                return self._wait_in_line(conn, key, holder, seen_until)
            self._exec(
                conn, 'DELETE FROM turn_queue WHERE scope = ? AND conversation_id = ? AND holder = ?', (*key, holder)
            )
        return True

    def release_turn(self, conversation_id: str, *, scope: str, holder: str) -> None:
        key = (scope, conversation_id, holder)
        with self._write(durable=False) as conn:
            self._exec(conn, 'DELETE FROM turn_leases WHERE scope = ? AND conversation_id = ? AND holder = ?', key)
            self._exec(conn, 'DELETE FROM turn_queue WHERE scope = ? AND conversation_id = ? AND holder = ?', key)

    def _take(self, conn: Connection, key: tuple[str, str], holder: str, until: float, now: float) -> bool:
        """Take the lease if it is free, expired or `holder`'s own; whether `holder` holds it now."""
        self._exec(
            conn,
            'INSERT INTO turn_leases (scope, conversation_id, holder, expires_at) VALUES (?, ?, ?, ?) '
            'ON CONFLICT (scope, conversation_id) DO UPDATE SET holder = excluded.holder, '
            'expires_at = excluded.expires_at '
            'WHERE turn_leases.expires_at < ? OR turn_leases.holder = excluded.holder',
            (*key, holder, until, now),
        )
        row = self._one(conn, 'SELECT holder FROM turn_leases WHERE scope = ? AND conversation_id = ?', key)
        return row is not None and row[0] == holder

    def _wait_in_line(self, conn: Connection, key: tuple[str, str], holder: str, seen_until: float) -> bool:
        """Join the line at the back, or keep the place `holder` has; always False (not admitted)."""
        self._exec(
            conn,
            'INSERT INTO turn_queue (scope, conversation_id, holder, seen_until) VALUES (?, ?, ?, ?) '
            'ON CONFLICT (scope, conversation_id, holder) DO UPDATE SET seen_until = excluded.seen_until',
            (*key, holder, seen_until),
        )
        return False
