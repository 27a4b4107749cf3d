"""The store's seal: a keyed chain over every fact the audit relies on, with its tip kept outside.

Every write to a conversation appends one *seal*: `tag = HMAC(key, previous tag || [conversation id,
scope, seq, digest of what the write changed])`. SQL stores seal the rows a write touched (message
batches with their provenance and chain links, branches, the head, receipts, wait records and
ledger rows); the FileStore seals the exact bytes of the lines it appended. `verify()` re-derives
the digests from what is stored now and walks the chain; the newest tag of each conversation is
also recorded in a *tip book* outside the store, beside the key.

Rules, and what they catch:
- The key never lives in the data it protects. It comes from `THREADLINE_STORE_KEYS` (`id=hex,...`,
  the first signs) or `THREADLINE_STORE_KEYS_FILE`; otherwise a per-install key is created on first
  use in `$THREADLINE_HOME` (default `$XDG_CONFIG_HOME/threadline`, else `~/.config/threadline`),
  mode 0600. `THREADLINE_REQUIRE_STORE_KEY=1` makes a store refuse to open without a configured key.
- Without the key nobody can make a valid tag, so an edited, inserted or forged record, a flipped
  provenance, a forged receipt, a conversation moved to another scope, and a recomputed unkeyed
  chain all fail at the first record or seal they touch.
- Truncation and rollback: removing the newest records, with or without their seals, or restoring
  an older copy of the whole database, leaves a valid chain that ends before the tip in the book;
  `verify()` reports it as truncated. A store ahead of its tip is accepted (a crash between the
  commit and the tip update, or a writer on another machine with its own book).
- The tip book is keyed by the store's id (minted once, in the store), not by its path or URL: a
  moved file and another spelling of a PostgreSQL host keep their truncation check.
- A store written before seals is sealed once, when the seal migration is applied (SQL) or when
  it has neither `seals.json` nor `store.json` (FileStore). A store that had seals and lost them,
  with or without their record, is never sealed again: its conversations fail as 'no_seals'. A
  conversation whose first seal is not the one in the book fails as 'replaced'.
- A retired key keeps verifying what it sealed (a store outlives any grace window); a seal made
  with a key that is not configured fails as 'unknown_key'.

What it cannot catch: an attacker who also holds the key directory (the key and the book live
together by design: protect that directory like a password file); deleting a whole conversation
(it is then simply not found); a store whose writers do not share one tip book (each machine's
book knows only its own writes, so rollback detection there is per machine); a store rewritten to
look in full like one made before seals (the seals table dropped and the migration history
edited, or `store.json` deleted too) on a machine whose book never saw it.

Not sealed, on purpose, each with its reason (none of them is evidence the audit relies on):
- run records, their outputs, step events and snapshots: what a run did is the sealed messages
  and ledger; these are for resuming and debugging, and are rebuilt from those where it matters;
- the conversation's usage total (what `UsageLimits` counts across runs): a budget counter, not a
  fact of the history; an edit of it changes how much a later run may spend, never what the
  history says (per-response usage inside the messages is sealed with them);
- stored audit events (sanitize records): notes about what was stripped, content-free;
- the search index: it only chooses which messages a search finds; what a hit shows is read
  from the sealed message itself, so an edited index row cannot change what a model is shown;
- notebooks (`Memory`): model-written notes, versioned, outside any conversation.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from threadline.exceptions import UserError
from threadline.trust._keys import Keyring, SigningKey
from threadline.trust._mac import mac, mac_hex, same_tag, text_bytes

__all__ = [
    'GENESIS_TAG',
    'Link',
    'Problem',
    'StoreSeal',
    'Tip',
    'TipBook',
    'Walk',
    'fact_digest',
    'threadline_home',
]

GENESIS_TAG = '0' * 64
_canonical = msgspec.json.Encoder(order='sorted')


def fact_digest(values: object) -> str:
    """The digest of one stored record's sealed values (canonical JSON)."""
    return hashlib.sha256(_canonical.encode(values)).hexdigest()[:32]


def threadline_home(environ: Mapping[str, str] | None = None) -> Path:
    """The per-install directory for the store key and the tip book."""
    env = os.environ if environ is None else environ
    if env.get('THREADLINE_HOME'):
        return Path(env['THREADLINE_HOME'])
    base = env.get('XDG_CONFIG_HOME') or str(Path.home() / '.config')
    return Path(base) / 'threadline'


@dataclass(frozen=True)
class Tip:
    """A conversation's newest seal as recorded outside the store; `genesis` is its first tag (a
    conversation deleted and created again starts a new chain)."""

    genesis: str
    seq: int
    tag: str


class TipBook:
    """Each conversation's newest seal, per store location, in a small SQLite file beside the key.
    A tip only moves forward within one chain."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            _retry_locked(lambda: self._db.execute('PRAGMA journal_mode=WAL'))
            self._db.execute('PRAGMA synchronous=NORMAL')
            _retry_locked(self._create_tables)
        except sqlite3.Error as exc:
            raise UserError(f'cannot open the tip book at {self.path}: {exc}') from None

    def _create_tables(self) -> None:
        """The book's tables, in one immediate transaction (one lock, which waits its turn)."""
        self._db.execute('BEGIN IMMEDIATE')
        try:
            self._db.execute(
                'CREATE TABLE IF NOT EXISTS tips (location TEXT NOT NULL, conversation_id TEXT NOT NULL, '
                'genesis TEXT NOT NULL, seq INTEGER NOT NULL, tag TEXT NOT NULL, '
                'PRIMARY KEY (location, conversation_id))'
            )
            self._db.execute(
                'CREATE TABLE IF NOT EXISTS adoptions (location TEXT PRIMARY KEY, at TEXT NOT NULL, '
                'key_id TEXT NOT NULL, conversations INTEGER NOT NULL)'
            )
            self._db.execute(
                'CREATE TABLE IF NOT EXISTS restores (location TEXT NOT NULL, at TEXT NOT NULL, source TEXT NOT NULL)'
            )
        except BaseException:
            self._db.execute('ROLLBACK')
            raise
        self._db.execute('COMMIT')

    def __repr__(self) -> str:
        return f'TipBook({self.path!r})'

    def get(self, location: str, conversation_id: str) -> Tip | None:
        with self._lock:
            row = self._db.execute(
                'SELECT genesis, seq, tag FROM tips WHERE location = ? AND conversation_id = ?',
                (location, conversation_id),
            ).fetchone()
        return None if row is None else Tip(row[0], int(row[1]), row[2])

    def advance(self, location: str, conversation_id: str, tip: Tip) -> None:
        with self._lock:
            self._db.execute(
                'INSERT INTO tips (location, conversation_id, genesis, seq, tag) VALUES (?, ?, ?, ?, ?) '
                'ON CONFLICT (location, conversation_id) DO UPDATE SET genesis = excluded.genesis, '
                'seq = excluded.seq, tag = excluded.tag '
                'WHERE excluded.genesis != tips.genesis OR excluded.seq > tips.seq',
                (location, conversation_id, tip.genesis, tip.seq, tip.tag),
            )

    def carry_over(self, old: str, new: str) -> None:
        """Copy the tips recorded under location `old` to `new` where `new` has none (a book
        written when tips were keyed by a store's path or URL, before stores had ids)."""
        with self._lock:
            self._db.execute(
                'INSERT INTO tips (location, conversation_id, genesis, seq, tag) '
                'SELECT ?, conversation_id, genesis, seq, tag FROM tips WHERE location = ? '
                'ON CONFLICT (location, conversation_id) DO NOTHING',
                (new, old),
            )

    def forget(self, location: str, conversation_id: str) -> None:
        with self._lock:
            self._db.execute('DELETE FROM tips WHERE location = ? AND conversation_id = ?', (location, conversation_id))

    def adoption(self, location: str) -> str | None:
        """When the store at `location` was first sealed, if this book saw it."""
        with self._lock:
            row = self._db.execute('SELECT at FROM adoptions WHERE location = ?', (location,)).fetchone()
        return None if row is None else str(row[0])

    def record_adoption(self, location: str, key_id: str, conversations: int) -> None:
        with self._lock:
            self._db.execute(
                'INSERT INTO adoptions (location, at, key_id, conversations) VALUES (?, ?, ?, ?) '
                'ON CONFLICT (location) DO NOTHING',
                (location, datetime.now(tz=UTC).isoformat(), key_id, conversations),
            )

    def record_restore(self, location: str, source: str) -> int:
        """An operator restored the store at `location` from a backup (`threadline db restore`):
        its tips are forgotten, so the older copy is not reported as truncated from now on, and
        the restore is recorded (when, from what). Returns how many tips were forgotten. A rollback
        nobody records this way is still caught."""
        with self._lock:
            forgotten = self._db.execute('DELETE FROM tips WHERE location = ?', (location,)).rowcount
            self._db.execute(
                'INSERT INTO restores (location, at, source) VALUES (?, ?, ?)',
                (location, datetime.now(tz=UTC).isoformat(), source),
            )
        return int(forgotten)

    def restores(self, location: str) -> list[tuple[str, str]]:
        """(when, from what) of each restore recorded for `location`, oldest first."""
        with self._lock:
            rows = self._db.execute('SELECT at, source FROM restores WHERE location = ? ORDER BY at', (location,))
            return [(str(at), str(source)) for at, source in rows.fetchall()]

    def close(self) -> None:
        with self._lock:
            self._db.close()


@dataclass(frozen=True)
class Link:
    """One stored seal, as read back: `where` names it for a report ('seal 3', 'line 17')."""

    seq: int
    key_id: str
    tag: str
    digest: str
    where: str


@dataclass(frozen=True)
class Problem:
    """The first thing that fails: which record, seal or line (`where`), a stable `code`, and why.

    Codes: 'message_changed', 'record_changed', 'record_removed', 'record_unsealed',
    'seal_invalid', 'seal_missing', 'unknown_key', 'no_seals', 'truncated', 'diverged', 'replaced'."""

    where: str
    code: str
    why: str


@dataclass(frozen=True)
class Walk:
    """The result of walking a conversation's seals: `problem` is the first failure; `tags` are
    the tags that verified, in order; `tip` is what the tip book says (see `StoreSeal.tip_status`)."""

    problem: Problem | None
    tags: tuple[str, ...]
    key_ids: tuple[str, ...]
    tip: str = 'none'

    @property
    def count(self) -> int:
        return len(self.tags)

    @property
    def genesis(self) -> str | None:
        return self.tags[0] if self.tags else None


class StoreSeal:
    """The keys a store seals with and the tip book that remembers each conversation's newest seal.

    `StoreSeal.from_environment()` is what stores use by default; `StoreSeal.in_directory(path)`
    keeps a key and a book in a directory you choose (tests, demos, one key per deployment);
    `StoreSeal.ephemeral()` is for stores that die with the process.
    """

    def __init__(self, keys: Keyring | None, tips: TipBook | None, *, source: str) -> None:
        self.keys = keys
        self.tips = tips
        self.source = source
        """Where the key came from (for reports: never the key itself)."""

    def __repr__(self) -> str:
        return f'StoreSeal(key={self.key_id!r}, source={self.source!r})'

    @property
    def key_id(self) -> str | None:
        return None if self.keys is None else self.keys.active

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, *, create: bool = True) -> StoreSeal:
        """Keys from `THREADLINE_STORE_KEYS[_FILE]`, else the per-install key (created when `create`),
        and the tip book in the per-install directory."""
        env = os.environ if environ is None else environ
        home = threadline_home(env)
        configured = env.get('THREADLINE_STORE_KEYS_FILE') or env.get('THREADLINE_STORE_KEYS')
        cache_key = (str(home), env.get('THREADLINE_STORE_KEYS'), env.get('THREADLINE_STORE_KEYS_FILE'))
        cached = _shared.get(cache_key)
        if cached is not None and (cached.keys is not None or not create):
            return cached
        if configured:
            keys: Keyring | None = Keyring.from_env(env, variable='THREADLINE_STORE_KEYS')
            source = 'THREADLINE_STORE_KEYS_FILE' if env.get('THREADLINE_STORE_KEYS_FILE') else 'THREADLINE_STORE_KEYS'
        elif env.get('THREADLINE_REQUIRE_STORE_KEY', '').lower() in ('1', 'true', 'yes'):
            raise UserError(
                'THREADLINE_REQUIRE_STORE_KEY is set but no store key is configured: set THREADLINE_STORE_KEYS '
                '(id=hex,...) or THREADLINE_STORE_KEYS_FILE; the store will not open without one'
            )
        else:
            keys = _install_key(home, create=create)
            source = str(home / _KEY_FILE)
        seal = cls(keys, _book(home, create=create or keys is not None), source=source)
        _shared[cache_key] = seal
        return seal

    @classmethod
    def in_directory(cls, directory: str | os.PathLike[str]) -> StoreSeal:
        """A key (created on first use, 0600) and a tip book kept in `directory`."""
        home = Path(directory)
        keys = _install_key(home, create=True)
        return cls(keys, _book(home, create=True), source=str(home / _KEY_FILE))

    @classmethod
    def ephemeral(cls) -> StoreSeal:
        """A random key and an in-memory book: for a store that disappears with the process."""
        return cls(Keyring.single(secrets.token_bytes(32), 'ephemeral'), TipBook(':memory:'), source='ephemeral')

    def tag(self, prev: str, conversation_id: str, scope: str, seq: int, digest: str) -> tuple[str, str]:
        """(key id, tag) of the next seal, under the active key."""
        if self.keys is None:
            raise UserError(
                f'no store key to seal this write with ({self.source}): set THREADLINE_STORE_KEYS, or open the '
                'store for writing once so that a per-install key is created'
            )
        key = self.keys.signing_key()
        return key.key_id, _mac(key, prev, conversation_id, scope, seq, digest)

    def derived_key(self, purpose: str) -> bytes:
        """A key for `purpose` derived from the active store key (so it, too, lives outside the
        data): the audit's keyed hashes use `derived_key('audit')`. It changes when the key rotates."""
        if self.keys is None:
            raise UserError(f'no store key to derive the {purpose} key from ({self.source}): set THREADLINE_STORE_KEYS')
        return mac(self.keys.signing_key().secret, b'threadline/' + text_bytes(purpose))

    def walk(self, conversation_id: str, scope: str, links: Iterable[Link]) -> Walk:
        """Check each seal's tag in order; the first gap, unknown key or bad tag is the problem."""
        tags: list[str] = []
        used: list[str] = []
        for link in links:
            bad = self._link_problem(link, len(tags), tags[-1] if tags else GENESIS_TAG, conversation_id, scope)
            if bad is not None:
                return Walk(bad, tuple(tags), tuple(used))
            if link.key_id not in used:
                used.append(link.key_id)
            tags.append(link.tag)
        return Walk(None, tuple(tags), tuple(used))

    def check(
        self, location: str | None, conversation_id: str, scope: str, links: Iterable[Link]
    ) -> tuple[Walk, Problem | None]:
        """Walk `links`, then the tip outside the store: (walk, its first problem, or 'no_seals'
        when there is nothing to walk)."""
        walk = self.tip_status(location, conversation_id, self.walk(conversation_id, scope, links))
        if walk.problem is None and not walk.count:
            why = 'the conversation has no seals: it was written without the store key, or they were removed'
            return walk, Problem('seals', 'no_seals', why)
        return walk, walk.problem

    def _link_problem(self, link: Link, seq: int, prev: str, conversation_id: str, scope: str) -> Problem | None:
        if link.seq != seq:
            return Problem(f'seal {seq}', 'seal_missing', f'it is missing ({link.where} holds seal {link.seq})')
        key = self._key(link.key_id)
        if key is None:
            why = f'it was made with key {link.key_id!r}, which is not configured here ({self.source})'
            return Problem(link.where, 'unknown_key', why)
        if not same_tag(_mac(key, prev, conversation_id, scope, link.seq, link.digest), link.tag):
            why = (
                f'it does not verify under key {link.key_id!r}: what it seals was edited or forged, or the '
                'conversation was moved to another scope'
            )
            return Problem(link.where, 'seal_invalid', why)
        return None

    def _key(self, key_id: str) -> SigningKey | None:
        if self.keys is None:
            return None
        return next((k for k in self.keys.keys if k.key_id == key_id), None)

    def tip_status(self, location: str | None, conversation_id: str, walk: Walk) -> Walk:
        """`walk` with its tip status: 'current', 'behind' (the store is ahead of the book: fine),
        'none', or a problem: 'truncated', 'diverged', 'replaced' (its first seal is not the book's:
        recreated where this book did not see it, or re-sealed by someone who removed its seals)."""
        tip = None if self.tips is None or location is None else self.tips.get(location, conversation_id)
        status, problem = 'none', None
        if tip is not None and walk.genesis is not None and tip.genesis != walk.genesis:
            status = 'replaced'
            why = (
                'its first seal is not the one recorded outside the store: it was deleted and written again '
                'where this tip book did not see it, or its seals were removed and made again'
            )
            problem = Problem('seal 0', 'replaced', why)
        elif tip is not None and tip.seq >= walk.count:
            status = 'truncated'
            why = (
                f'the store ends at seal {walk.count - 1} but the tip recorded outside it is at seal {tip.seq}: '
                'records were removed or the store was rolled back'
            )
            problem = Problem(f'seal {walk.count}', 'truncated', why)
        elif tip is not None and walk.tags[tip.seq] != tip.tag:
            status = 'diverged'
            problem = Problem(f'seal {tip.seq}', 'diverged', 'it differs from the tip recorded outside the store')
        elif tip is not None:
            status = 'current' if tip.seq == walk.count - 1 else 'behind'
        return Walk(walk.problem or problem, walk.tags, walk.key_ids, status)

    def advance(self, location: str | None, conversation_id: str, tip: Tip) -> None:
        if self.tips is not None and location is not None:
            self.tips.advance(location, conversation_id, tip)

    def forget(self, location: str | None, conversation_id: str) -> None:
        if self.tips is not None and location is not None:
            self.tips.forget(location, conversation_id)


_KEY_FILE = 'store-keys.json'
_shared: dict[tuple[str, str | None, str | None], StoreSeal] = {}


def _mac(key: SigningKey, prev: str, conversation_id: str, scope: str, seq: int, digest: str) -> str:
    message = bytes.fromhex(prev) + _canonical.encode([conversation_id, scope, seq, digest])
    return mac_hex(key.secret, message)


def _retry_locked(step: Callable[[], object], wait: float = 30.0) -> None:
    """Run `step`, again while another process holds the book's file locked. Switching to WAL
    does not wait on SQLite's busy handler, so two processes opening a new book at once (two
    servers starting together) would otherwise fail at once with 'database is locked'."""
    deadline, pause = time.monotonic() + wait, 0.01
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if 'locked' not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


def _install_key(home: Path, *, create: bool) -> Keyring | None:
    """The per-install keys file in `home`, created (0600, one random key) on first use."""
    path = home / _KEY_FILE
    if not path.exists():
        if not create:
            return None
        try:
            home.mkdir(mode=0o700, parents=True, exist_ok=True)
            key_id = 'install-' + secrets.token_hex(4)
            text = json.dumps({'active': key_id, 'keys': {key_id: {'secret': secrets.token_hex(32)}}})
            tmp = home / f'.{_KEY_FILE}.{os.getpid()}.{threading.get_ident()}'
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, 'w') as handle:
                handle.write(text)
            with contextlib.suppress(FileExistsError):  # a concurrent creator's key wins, not both
                os.link(tmp, path)
            tmp.unlink(missing_ok=True)
        except OSError as exc:
            raise UserError(
                f'cannot create the per-install store key in {home} ({exc.strerror}); set THREADLINE_HOME to a '
                'writable directory or configure THREADLINE_STORE_KEYS'
            ) from None
    return Keyring.from_file(path)


def _book(home: Path, *, create: bool) -> TipBook | None:
    path = home / 'tips.sqlite'
    if not create and not path.exists():
        return None
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    return TipBook(path)
