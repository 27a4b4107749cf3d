"""The FileStore's file handling: one JSON-lines file per conversation, `flock` for writers,
`fsync` before a write returns, and the state each file replays into."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import msgspec

from threadline.exceptions import BackendError, CorruptRecordError, MessageValidationError, UserError
from threadline.messages import ModelMessage, ModelMessagesTypeAdapter
from threadline.messages.wire import encode_each
from threadline.storage._neutral import check_scope, check_writable, not_found, now_text, run_not_found
from threadline.storage._records import Provenance
from threadline.storage.file._flock import exclusive
from threadline.storage.file._records import BatchLine, CreateLine, FileRecord, decode_line, file_key
from threadline.storage.file._seal import seal_bytes
from threadline.storage.file._state import Branch, ConvState, replay
from threadline.storage.index._text import title_of
from threadline.trust.sealing import GENESIS_TAG, StoreSeal, extend_chain_messages

_encoder = msgspec.json.Encoder()

__all__ = ['FileBase']


class FileBase:
    """A directory of conversation files: locking, appending lines, reading them back (a torn last
    line is ignored, and cut off by the next writer), and the lineage and write steps built on them."""

    def __init__(self, directory: str | os.PathLike[str], seal: StoreSeal | None = None) -> None:
        self.root = Path(directory)
        try:
            (self.root / 'conversations').mkdir(parents=True, exist_ok=True)
            (self.root / 'runs').mkdir(exist_ok=True)
        except OSError as exc:
            raise BackendError(f'cannot use {self.root} as a FileStore directory: {exc}') from None
        self._lock = threading.RLock()
        self._cache: dict[Path, _Cached] = {}
        self._writing: dict[Path, str] = {}
        self.bytes_read = 0
        """Bytes read from conversation files so far (how tests show a write's reads do not grow)."""
        self.seal = seal or StoreSeal.from_environment()
        """The key and tip book that seal this store's writes."""
        self._location = 'file:' + str(self.root.resolve())
        self._adopt()

    def __repr__(self) -> str:
        return f'FileBackend({str(self.root)!r})'

    def close(self) -> None:
        """Nothing to release: every call opens and closes its files."""

    # -- files ------------------------------------------------------------------------------
    def _path(self, conversation_id: str) -> Path:
        return self.root / 'conversations' / f'{file_key(conversation_id)}.jsonl'

    @contextmanager
    def _locked(self, conversation_id: str) -> Iterator[Path]:
        path = self._path(conversation_id)
        with self._lock, exclusive(path.with_suffix('.lock')):
            outer = self._writing.get(path)
            self._writing[path] = conversation_id
            try:
                self._cut_torn_tail(path)  # every writer, whatever it writes, appends behind whole lines
                yield path
            finally:
                if outer is None:
                    self._writing.pop(path, None)

    def _append_lines(self, path: Path, records: list[FileRecord], *, durable: bool = True) -> None:
        """Append `records` and their seal in one write, fsync (unless not `durable`: then the
        next durable write's fsync covers it), then record the new tip."""
        conversation_id = self._writing[path]  # set by `_locked`, which every writer holds
        state = self._state(conversation_id)
        data = b''.join(_encoder.encode(r) + b'\n' for r in records)
        if state is None:
            create = records[0]
            assert isinstance(create, CreateLine), 'a new conversation file starts with its create record'
            sealed = seal_bytes(
                self.seal,
                data,
                conversation_id=conversation_id,
                scope=create.scope,
                seq=0,
                prev=GENESIS_TAG,
                genesis=None,
            )
        else:
            sealed = seal_bytes(
                self.seal,
                data,
                conversation_id=conversation_id,
                scope=state.scope,
                seq=state.seals,
                prev=state.seal_tag,
                genesis=state.seal_genesis,
            )
        self._write_bytes(path, sealed.data, durable=durable)
        self.seal.advance(self._location, conversation_id, sealed.tip)

    def _write_bytes(self, path: Path, data: bytes, *, durable: bool = True) -> None:
        try:
            with open(path, 'ab') as handle:
                handle.write(data)
                handle.flush()
                if durable:
                    os.fsync(handle.fileno())
        except OSError as exc:
            raise BackendError(f'cannot write {path.name}: {exc}') from None

    def _adopt(self) -> None:
        """Learn the store's id, and seal every conversation file of a store written before seals.

        Rules:
        - A store never had seals when it has neither `seals.json` (the adoption record) nor
          `store.json` (its id, written after adoption): only then are its files sealed, each once,
          under its lock. A store with `store.json` and no `seals.json` lost its record: nothing is
          sealed, every file whose seal lines were removed fails `verify()` ('no_seals'), and the
          new record says the adoption was refused.
        - The id is written last, so a crash part-way leaves a store that is adopted again, and a
          file already sealed is skipped.
        - The tip book is keyed by the id (tips recorded under the path are carried over), so a
          moved directory keeps its truncation check.
        """
        marker, identity = self.root / 'seals.json', self.root / 'store.json'
        store_id = _read_id(identity)
        if not marker.exists():
            legacy = store_id is None
            seen = self.seal.tips.adoption(self._location) if self.seal.tips else None
            adopted = 0
            for path in sorted((self.root / 'conversations').glob('*.jsonl')) if legacy else []:
                adopted += self._adopt_file(path)
            record: dict[str, object] = {'at': now_text(), 'key_id': self.seal.key_id, 'adopted': adopted}
            record['book_saw'] = seen
            if not legacy:
                record['refused'] = 'the store had seals (store.json is there), but their record was removed'
            _write_once(marker, json.dumps(record))
            if legacy and self.seal.tips and self.seal.key_id:
                self.seal.tips.record_adoption(self._location, self.seal.key_id, adopted)
        if store_id is None:
            _write_once(identity, json.dumps({'store_id': secrets.token_hex(16)}))
            store_id = _read_id(identity)
        if store_id is not None:
            key = f'store:{store_id}'
            if self.seal.tips is not None:
                self.seal.tips.carry_over(self._location, key)
            self._location = key

    def _adopt_file(self, path: Path) -> int:
        try:
            first = decode_line(path.read_bytes().split(b'\n', 1)[0])
        except (OSError, msgspec.DecodeError):
            return 0  # not a conversation file this version can read: verify will say so
        if not isinstance(first, CreateLine):
            return 0
        with self._locked(first.id) as locked:
            state = self._state(first.id)
            if state is None or state.seals:
                return 0
            data = locked.read_bytes()
            sealed = seal_bytes(
                self.seal,
                b'',
                conversation_id=first.id,
                scope=state.scope,
                seq=0,
                prev=GENESIS_TAG,
                genesis=None,
                adopted=now_text(),
                covers=data,
            )
            self._write_bytes(locked, sealed.data)
            self.seal.advance(self._location, first.id, sealed.tip)
        return 1

    def _read_lines(self, path: Path, conversation_id: str) -> list[FileRecord]:
        """Every complete record of a file (a torn last line from a crash was never acknowledged)."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise BackendError(f'cannot read {path.name}: {exc}') from None
        self.bytes_read += len(data)
        return _parse(data, conversation_id, first_line=1)[0]

    def _cut_torn_tail(self, path: Path) -> None:
        """Cut a torn last line (a writer killed mid-line) before appending behind it. Reads only
        the end of the file."""
        try:
            with open(path, 'r+b') as handle:
                size = handle.seek(0, os.SEEK_END)
                if size == 0:
                    return
                handle.seek(size - 1)
                self.bytes_read += 1
                if handle.read(1) == b'\n':
                    return  # the common case: one byte read
                end = size
                while end > 0:
                    start = max(0, end - _TAIL_CHUNK)
                    handle.seek(start)
                    chunk = handle.read(end - start)
                    self.bytes_read += len(chunk)
                    newline = chunk.rfind(b'\n')
                    if newline >= 0:
                        end = start + newline + 1
                        break
                    end = start
                handle.truncate(end)
                os.fsync(handle.fileno())
        except FileNotFoundError:
            return

    def _state(self, conversation_id: str) -> ConvState | None:
        """The conversation's state, reading only what was appended since this store last read the
        file (a write costs the size of the turn, not of the conversation)."""
        path = self._path(conversation_id)
        with self._lock:
            try:
                with open(path, 'rb') as handle:
                    return self._refresh(handle, path, conversation_id)
            except FileNotFoundError:
                self._cache.pop(path, None)
                return None
            except OSError as exc:
                raise BackendError(f'cannot read {path.name}: {exc}') from None

    def _refresh(self, handle: BinaryIO, path: Path, conversation_id: str) -> ConvState | None:
        info = os.fstat(handle.fileno())
        cached = self._cache.get(path)
        if cached is not None and cached.matches(handle, info):
            self.bytes_read += len(cached.head)
            handle.seek(cached.offset)
            data = handle.read(info.st_size - cached.offset)
            self.bytes_read += len(data)
            records, used = _parse(data, conversation_id, first_line=cached.lines + 1)
            try:
                for record in records:
                    cached.state.apply(record)
            except (msgspec.ValidationError, KeyError):
                self._cache.pop(path, None)
                raise _damaged(conversation_id, cached.lines + 1) from None
            cached.offset, cached.lines = cached.offset + used, cached.lines + len(records)
            return cached.state
        handle.seek(0)
        data = handle.read()
        self.bytes_read += len(data)
        records, used = _parse(data, conversation_id, first_line=1)
        if not records or not isinstance(records[0], CreateLine):
            return None
        try:
            state = replay(records)
        except (msgspec.ValidationError, KeyError):
            raise _damaged(conversation_id, 1) from None
        head = data[: data.index(b'\n') + 1]
        self._cache[path] = _Cached(info.st_dev, info.st_ino, head, used, len(records), state)
        return state

    def _get(self, conversation_id: str, scope: str) -> ConvState:
        check_scope(scope)
        state = self._state(conversation_id)
        if state is None or state.scope != scope:
            raise not_found(conversation_id)
        return state

    # -- lineage ----------------------------------------------------------------------------
    def _segments(self, state: ConvState, branch_id: int | None = None) -> list[tuple[Branch, int, int]]:
        out: list[tuple[Branch, int, int]] = []
        branch: Branch | None = state.branches[state.head if branch_id is None else branch_id]
        owner_state = state
        end: int | None = None
        while branch is not None:
            stop = branch.length if end is None else min(end, branch.length)
            if stop > branch.fork_position:
                out.append((branch, branch.fork_position, stop))
            end = min(stop, branch.fork_position)  # a fork point below a rewrite shares less
            if branch.parent is not None:
                branch = owner_state.branches[branch.parent]
            elif owner_state.parent_branch is not None and end > 0:
                parent_id, parent_branch = owner_state.parent_branch
                parent = self._state(parent_id)
                if parent is None:
                    raise CorruptRecordError(f'conversation {state.id!r}: its fork parent {parent_id!r} is missing')
                owner_state, branch = parent, parent.branches[parent_branch]
            else:
                branch = None
        out.reverse()
        return out

    def _bodies(
        self,
        state: ConvState,
        start: int = 0,
        end: int | None = None,
        branch_id: int | None = None,
        *,
        gaps: bool = False,
    ) -> list[tuple[int, str]]:
        """(position, stored JSON) of the history. A position whose batch line is gone (an edited
        file) is a `CorruptRecordError`, or with `gaps` left out, for `verify()` to report."""
        out = []
        for branch, lo, hi in self._segments(state, branch_id):
            for position in range(max(lo, start), min(hi, end if end is not None else hi)):
                body = branch.messages.get(position)
                if body is None:
                    if gaps:
                        continue
                    raise CorruptRecordError(
                        f'conversation {state.id!r}: message {position} is missing from its file; run '
                        '`threadline db verify` and restore the file from a backup'
                    )
                out.append((position, body))
        return out

    def _length(self, state: ConvState) -> int:
        return state.branches[state.head].length

    def _decode(self, rows: list[tuple[int, str]], conversation_id: str) -> list[ModelMessage]:
        if not rows:
            return []
        try:
            return ModelMessagesTypeAdapter.validate_json(('[' + ','.join(b for _, b in rows) + ']').encode())
        except MessageValidationError as exc:
            raise CorruptRecordError(
                f'conversation {conversation_id!r}: a stored message cannot be loaded ({exc.reason})',
                conversation_id=conversation_id,
            ) from None

    # -- writes -----------------------------------------------------------------------------
    def _open(
        self,
        path: Path,
        conversation_id: str,
        scope: str,
        expected: int | None,
        create: bool,
        *,
        changes_history: bool = True,
    ) -> tuple[ConvState, list[FileRecord]]:
        state = self._state(conversation_id)
        if state is not None and state.scope != scope:
            raise not_found(conversation_id)
        if state is None:
            if not create or expected not in (None, 0):
                raise not_found(conversation_id)
            if not isinstance(scope, str) or not scope:
                raise UserError('scope must be a non-empty string decided by the server (a tenant or owner id)')
            record = CreateLine(id=conversation_id, scope=scope, at=now_text())
            return replay([record]), [record]
        check_writable(conversation_id, state.revision, expected, state.quarantine, changes_history=changes_history)
        return state, []

    def _batch(
        self,
        state: ConvState,
        branch: int,
        start: int,
        messages: Sequence[ModelMessage],
        provenance: Provenance,
        run_id: str | None,
        prev_link: str,
    ) -> BatchLine:
        bodies = encode_each(messages)
        return BatchLine(
            branch=branch,
            start=start,
            bodies=[b.decode() for b in bodies],
            provenance=provenance,
            run_id=run_id,
            prev_link=prev_link,
            link=extend_chain_messages(prev_link, messages),
            at=now_text(),
            title=None if state.title else title_of(list(messages)),
        )

    def _run_owner(self, run_id: str) -> str | None:
        try:
            return (self.root / 'runs' / file_key(run_id)).read_text()
        except FileNotFoundError:
            return None

    def _claim_run(self, run_id: str, conversation_id: str) -> None:
        """Record that the run belongs to `conversation_id`, or check that it already does (a run
        belongs to one conversation for good). The index entry is created atomically."""
        target = self.root / 'runs' / file_key(run_id)
        if not target.exists():
            tmp = target.with_suffix(f'.{os.getpid()}.{threading.get_ident()}.tmp')
            tmp.write_text(conversation_id)
            with contextlib.suppress(FileExistsError):  # a concurrent claim wins, and is checked below
                os.link(tmp, target)
            tmp.unlink(missing_ok=True)
        if self._run_owner(run_id) != conversation_id:
            raise run_not_found(run_id)

    def _run_state(self, run_id: str, scope: str) -> ConvState | None:
        """The conversation that owns the run, when it is in `scope`."""
        check_scope(scope)
        owner = self._run_owner(run_id)
        state = self._state(owner) if owner else None
        return state if state is not None and state.scope == scope else None


_TAIL_CHUNK = 4096


@dataclass
class _Cached:
    """A file's state as last read: which file (device, inode and first line, so a deleted and
    recreated file is never mistaken for it), how far it was read, and what that said."""

    device: int
    inode: int
    head: bytes
    offset: int
    lines: int
    state: ConvState

    def matches(self, handle: BinaryIO, info: os.stat_result) -> bool:
        if (info.st_dev, info.st_ino) != (self.device, self.inode) or info.st_size < self.offset:
            return False
        handle.seek(0)
        return handle.read(len(self.head)) == self.head


def _parse(data: bytes, conversation_id: str, *, first_line: int) -> tuple[list[FileRecord], int]:
    """The complete records in `data` and how many bytes they take (a torn last line is left)."""
    used = data.rfind(b'\n') + 1
    records: list[FileRecord] = []
    for number, line in enumerate(data[:used].split(b'\n')[:-1], start=first_line):
        try:
            records.append(decode_line(line))
        except msgspec.DecodeError:
            raise _damaged(conversation_id, number) from None
    return records, used


def _damaged(conversation_id: str, line: int) -> CorruptRecordError:
    return CorruptRecordError(
        f'conversation {conversation_id!r}: line {line} of its file is damaged or was written by a newer version '
        'of Threadline; restore the file from a backup, or upgrade',
        conversation_id=conversation_id,
    )


def _write_once(path: Path, text: str) -> None:
    """Create `path` holding `text`, whole, unless a concurrent opener created it first."""
    tmp = path.with_suffix(f'.{os.getpid()}.{threading.get_ident()}.tmp')
    try:
        tmp.write_text(text)
        with contextlib.suppress(FileExistsError):  # the first opener's file wins
            os.link(tmp, path)
    except OSError as exc:
        raise BackendError(f'cannot write {path}: {exc.strerror}') from None
    finally:
        tmp.unlink(missing_ok=True)


def _read_id(path: Path) -> str | None:
    """The store id in `store.json`, or None when there is none (a store made before ids)."""
    try:
        value = json.loads(path.read_text()).get('store_id')
    except FileNotFoundError:
        return None
    except (OSError, ValueError, AttributeError) as exc:
        raise BackendError(f'{path} is damaged ({type(exc).__name__}); restore it from a backup') from None
    if not isinstance(value, str) or not value:
        raise BackendError(f'{path} holds no store id; restore it from a backup')
    return value
