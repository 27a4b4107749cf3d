"""Turn leases in a FileStore directory: one small JSON file per (scope, conversation), read and
replaced under an exclusive `flock` on its lock file, so processes sharing the directory agree on
one holder (see `TurnLeases` for the rules)."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from threadline.storage.file._records import file_key
from threadline.storage.sql._leases import check_ttl

__all__ = ['FileLeases']


class FileLeases:
    """The lease half of the contract for a FileStore."""

    root: Path
    _lease_lock = threading.Lock()

    def claim_turn(self, conversation_id: str, *, scope: str, holder: str, ttl: float) -> bool:
        until = time.time() + check_ttl(ttl)
        with self._lease(scope, conversation_id) as path:
            current = _holder(path, scope, conversation_id)
            if current is not None and current[0] != holder and current[1] >= time.time():
                return False
            record = {'scope': scope, 'conversation_id': conversation_id, 'holder': holder, 'expires_at': until}
            partial = path.with_suffix('.tmp')
            partial.write_text(json.dumps(record))
            os.replace(partial, path)  # a reader sees the old lease or the new one, never half
            return True

    def release_turn(self, conversation_id: str, *, scope: str, holder: str) -> None:
        with self._lease(scope, conversation_id) as path:
            current = _holder(path, scope, conversation_id)
            if current is not None and current[0] == holder:
                path.unlink()

    @contextmanager
    def _lease(self, scope: str, conversation_id: str) -> Iterator[Path]:
        folder = self.root / 'leases'
        folder.mkdir(exist_ok=True)
        path = folder / f'{file_key(scope + chr(0) + conversation_id)}.json'
        with self._lease_lock, open(path.with_suffix('.lock'), 'a') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield path
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _holder(path: Path, scope: str, conversation_id: str) -> tuple[str, float] | None:
    """(holder, expiry) of the lease in `path`, or None when there is none (or it is unreadable,
    or names another scope: a hash collision must not block anyone)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get('scope') != scope or data.get('conversation_id') != conversation_id:
        return None
    return str(data['holder']), float(data['expires_at'])
