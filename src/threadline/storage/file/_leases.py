"""Turn leases in a FileStore directory: one small JSON file per (scope, conversation), read and
replaced under an exclusive `flock` on its lock file, so processes sharing the directory agree on
one holder and on the order of the line waiting behind it (see `TurnLeases` for the rules)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from threadline.storage._contract import TURN_PATIENCE
from threadline.storage.file._flock import exclusive
from threadline.storage.file._records import file_key
from threadline.storage.sql._leases import check_ttl

__all__ = ['FileLeases']


class FileLeases:
    """The lease half of the contract for a FileStore. A record holds the lease (`holder`,
    `expires_at`) and the line (`queue`: [holder, seen_until] pairs, first come first)."""

    root: Path
    _lease_lock = threading.Lock()

    def claim_turn(
        self, conversation_id: str, *, scope: str, holder: str, ttl: float, patience: float = TURN_PATIENCE
    ) -> bool:
        ttl, patience = check_ttl(ttl), check_ttl(patience, 'patience')
        with self._lease(scope, conversation_id) as path:
            now = time.time()
            record = _record(path, scope, conversation_id)
            line = [entry for entry in record['queue'] if entry[1] >= now]
            held = record['holder'] not in (None, holder) and record['expires_at'] >= now
            ahead = record['holder'] != holder and bool(line) and line[0][0] != holder
            if held or ahead:
                for entry in line:
                    if entry[0] == holder:
                        entry[1] = now + patience  # keeps its place
                        break
                else:
                    line.append([holder, now + patience])
                _write(path, record | {'queue': line})
                return False
            line = [entry for entry in line if entry[0] != holder]
            _write(path, record | {'holder': holder, 'expires_at': now + ttl, 'queue': line})
            return True

    def release_turn(self, conversation_id: str, *, scope: str, holder: str) -> None:
        with self._lease(scope, conversation_id) as path:
            record = _record(path, scope, conversation_id)
            line = [entry for entry in record['queue'] if entry[0] != holder and entry[1] >= time.time()]
            if record['holder'] == holder:
                record |= {'holder': None, 'expires_at': 0.0}
            if record['holder'] is None and not line:
                path.unlink(missing_ok=True)
            else:
                _write(path, record | {'queue': line})

    @contextmanager
    def _lease(self, scope: str, conversation_id: str) -> Iterator[Path]:
        folder = self.root / 'leases'
        folder.mkdir(exist_ok=True)
        path = folder / f'{file_key(scope + chr(0) + conversation_id)}.json'
        with self._lease_lock, exclusive(path.with_suffix('.lock')):
            yield path


def _record(path: Path, scope: str, conversation_id: str) -> dict[str, Any]:
    """The lease record in `path`: its holder (None when nobody holds it), expiry and line. An
    unreadable record, or one naming another scope (a hash collision must not block anyone),
    reads as empty."""
    empty: dict[str, Any] = {
        'scope': scope,
        'conversation_id': conversation_id,
        'holder': None,
        'expires_at': 0.0,
        'queue': [],
    }
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return empty
    if not isinstance(data, dict) or data.get('scope') != scope or data.get('conversation_id') != conversation_id:
        return empty
    try:
        queue = [[str(h), float(t)] for h, t in data.get('queue', [])]
        holder = None if data.get('holder') is None else str(data['holder'])
        return empty | {'holder': holder, 'expires_at': float(data.get('expires_at', 0.0)), 'queue': queue}
    except (TypeError, ValueError):
        return empty


def _write(path: Path, record: dict[str, Any]) -> None:
    """Replace the record whole: a reader sees the old one or the new one, never half (the caller
    holds the lock, so one temporary name is enough)."""
    partial = path.with_suffix('.tmp')
    partial.write_text(json.dumps(record))
    os.replace(partial, path)
