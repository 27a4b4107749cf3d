"""Memory's notebooks in a FileStore directory: one JSON file per (scope, namespace).

A write takes the notebook's lock file, checks the version, writes the new file beside the old
one, fsyncs it and renames it over (so a crash leaves the old notebook or the new one, never half
of one), then fsyncs the directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from threadline.exceptions import BackendError, UserError
from threadline.storage._neutral import check_scope, now_text, parse_time, stale_notebook
from threadline.storage._records import Notebook, NotebookWrite
from threadline.storage.file._flock import exclusive
from threadline.storage.file._records import file_key

__all__ = ['FileNotebooks']


class FileNotebooks:
    """The notebook half of the contract for a FileStore (see `NotebookStore` for the rules)."""

    root: Path
    _notebook_lock = threading.Lock()

    def _notebook_path(self, scope: str, namespace: str) -> Path:
        if not isinstance(namespace, str) or not namespace:
            raise UserError(f'a notebook namespace must be a non-empty string (a user or tenant id), not {namespace!r}')
        folder = self.root / 'notebooks'
        folder.mkdir(exist_ok=True)
        # The pair as JSON, not joined by a separator: no scope and namespace can spell another pair.
        path = folder / f'{file_key(json.dumps([scope, namespace]))}.json'
        legacy = folder / f'{file_key(scope + chr(0) + namespace)}.json'  # how 0.2 named it
        if not path.exists() and legacy.exists() and self._load_notebook(legacy, scope, namespace) is not None:
            with contextlib.suppress(FileNotFoundError, FileExistsError):  # a concurrent opener moved it
                os.link(legacy, path)
            legacy.unlink(missing_ok=True)
        return path

    def _load_notebook(self, path: Path, scope: str, namespace: str) -> dict[str, Any] | None:
        try:
            data: dict[str, Any] = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise BackendError(f'cannot read notebook {namespace!r}: {exc}') from None
        # a hash collision, or a file copied between scopes, reads as another scope's: missing
        return data if data.get('scope') == scope and data.get('namespace') == namespace else None

    @contextmanager
    def _notebook_locked(self, path: Path) -> Iterator[None]:
        with self._notebook_lock, exclusive(path.with_suffix('.lock')):
            yield

    def read_notebook(self, namespace: str, *, scope: str) -> Notebook | None:
        check_scope(scope)
        data = self._load_notebook(self._notebook_path(scope, namespace), scope, namespace)
        if data is None:
            return None
        return Notebook(namespace, data['content'], int(data['version']), parse_time(data['updated_at']))

    def write_notebook(
        self, namespace: str, content: str, *, scope: str, expected_version: int, operation_id: str | None = None
    ) -> NotebookWrite:
        check_scope(scope)
        path = self._notebook_path(scope, namespace)
        with self._notebook_locked(path):
            found = self._load_notebook(path, scope, namespace)
            if found is None and path.exists():  # another pair's file under this name: never overwrite it
                raise BackendError(
                    f'notebook {namespace!r} cannot be written: its file name is taken; nothing was written'
                )
            data = found or {'ops': {}, 'version': 0}
            if operation_id is not None and operation_id in data['ops']:
                return NotebookWrite(int(data['ops'][operation_id]), replayed=True)
            current = int(data['version'])
            if current != expected_version:
                raise stale_notebook(namespace, expected_version, current)
            version = current + 1
            ops = dict(data['ops'])
            if operation_id is not None:
                ops[operation_id] = version
            record = {'scope': scope, 'namespace': namespace, 'content': content, 'version': version}
            self._replace_file(path, {**record, 'updated_at': now_text(), 'ops': ops})
        return NotebookWrite(version)

    def delete_notebook(self, namespace: str, *, scope: str) -> bool:
        check_scope(scope)
        path = self._notebook_path(scope, namespace)
        with self._notebook_locked(path):
            if self._load_notebook(path, scope, namespace) is None:
                return False
            path.unlink()
            return True

    def _prune_notebooks(self, older_than: datetime, scope: str | None) -> None:
        """Erase the notebooks (of `scope`, or every scope) not written since `older_than`."""
        folder = self.root / 'notebooks'
        for path in sorted(folder.glob('*.json')) if folder.is_dir() else []:
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if (scope is None or data.get('scope') == scope) and parse_time(data['updated_at']) < older_than:
                self.delete_notebook(data['namespace'], scope=data['scope'])

    def _replace_file(self, path: Path, data: dict[str, Any]) -> None:
        temporary = path.with_suffix('.tmp')
        try:
            with open(temporary, 'w') as handle:
                json.dump(data, handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)
            directory = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as exc:
            raise BackendError(f'cannot write notebook {data["namespace"]!r}: {exc}') from None
