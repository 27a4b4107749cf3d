"""Signing keys by id, for rotation: one active key signs, retired keys still verify for a grace
window, and no key ever appears in a repr, log, error or report.

Sources: `Keyring.from_env()` reads `THREADLINE_TRUST_KEYS` (`id=hex[,id=hex...]`, the first is
active) and `THREADLINE_TRUST_KEYS_FILE`; `Keyring.from_file(path)` reads a JSON file
`{"active": "k2", "keys": {"k1": {"secret": "<hex>", "retired_at": "<iso time>"}, "k2": {...}}}`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from threadline.exceptions import UserError

__all__ = ['Keyring', 'SigningKey', 'now_utc']

MIN_SECRET = 16


@dataclass(frozen=True)
class SigningKey:
    """One key: its id (public, carried by envelopes), its secret, and when it was retired."""

    key_id: str
    secret: bytes = field(repr=False)
    retired_at: datetime | None = None

    def __post_init__(self) -> None:
        if not self.key_id or not self.key_id.isprintable() or ':' in self.key_id:
            raise UserError(f'a signing key id must be printable text without ":", not {self.key_id!r}')
        if len(self.secret) < MIN_SECRET:
            raise UserError(f'signing key {self.key_id!r} is shorter than {MIN_SECRET} bytes; use 32 random bytes')


@dataclass(frozen=True)
class Keyring:
    """The keys a server signs and verifies with. `grace` is how long after its retirement a key
    still verifies (envelopes already handed to clients keep working through a rotation)."""

    keys: tuple[SigningKey, ...]
    active: str
    grace: timedelta = timedelta(days=7)

    def __post_init__(self) -> None:
        ids = [k.key_id for k in self.keys]
        if len(ids) != len(set(ids)):
            raise UserError('signing key ids must be unique')
        if self.active not in ids:
            raise UserError(f'the active signing key {self.active!r} is not in the keyring')
        if self.signing_key().retired_at is not None:
            raise UserError(f'the active signing key {self.active!r} is retired; make another key active')

    def __repr__(self) -> str:
        return f'Keyring(active={self.active!r}, keys={[k.key_id for k in self.keys]!r})'

    def signing_key(self) -> SigningKey:
        return next(k for k in self.keys if k.key_id == self.active)

    def verifying_key(self, key_id: str, now: datetime) -> SigningKey | Literal['unknown_key', 'retired_key']:
        """The key for `key_id`, or why it may not verify: `'unknown_key'` or `'retired_key'`."""
        key = next((k for k in self.keys if k.key_id == key_id), None)
        if key is None:
            return 'unknown_key'
        if key.retired_at is not None and now > key.retired_at + self.grace:
            return 'retired_key'
        return key

    @classmethod
    def single(cls, secret: bytes, key_id: str = 'k1') -> Keyring:
        return cls((SigningKey(key_id, secret),), key_id)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, variable: str = 'THREADLINE_TRUST_KEYS') -> Keyring:
        """Keys from `<variable>_FILE` (a keys file) or `<variable>` (`id=hex[,id=hex...]`, the first active)."""
        env = os.environ if environ is None else environ
        path = env.get(f'{variable}_FILE')
        if path:
            return cls.from_file(Path(path))
        spec = env.get(variable)
        if not spec:
            raise UserError(f'no signing keys: set {variable} (id=hex,...) or {variable}_FILE')
        keys = []
        for item in spec.split(','):
            key_id, _, secret = item.strip().partition('=')
            keys.append(SigningKey(key_id, _hex(secret, key_id)))
        return cls(tuple(keys), keys[0].key_id)

    @classmethod
    def from_file(cls, path: Path) -> Keyring:
        try:
            data = json.loads(path.read_text())
            entries = data['keys'].items()
            keys = tuple(
                SigningKey(
                    key_id,
                    _hex(entry['secret'], key_id),
                    datetime.fromisoformat(entry['retired_at']) if entry.get('retired_at') else None,
                )
                for key_id, entry in entries
            )
            grace = timedelta(seconds=float(data.get('grace_seconds', 7 * 86400)))
            return cls(keys, data['active'], grace)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise UserError(f'cannot read the signing keys file {path}: {type(exc).__name__}') from None


def _hex(secret: str, key_id: str) -> bytes:
    try:
        return bytes.fromhex(secret.strip())
    except ValueError:
        raise UserError(f'signing key {key_id!r} is not hex text') from None


def now_utc() -> datetime:
    return datetime.now(tz=UTC)
