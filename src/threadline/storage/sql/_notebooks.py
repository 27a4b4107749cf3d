"""Memory's notebooks on SQL: one row per (scope, namespace), and one receipt per applied operation."""

from __future__ import annotations

from datetime import datetime

from threadline.exceptions import UserError
from threadline.storage._neutral import check_scope, now_text, parse_time, stale_notebook
from threadline.storage._records import Notebook, NotebookWrite
from threadline.storage.sql._base import SQLBase
from threadline.storage.sql._dialect import Connection

__all__ = ['NotebookOps']


class NotebookOps(SQLBase):
    """The notebook half of the contract (see `NotebookStore` for the rules). A write locks the
    row it replaces by checking the version inside its transaction; the transaction is the
    compare-and-set."""

    def read_notebook(self, namespace: str, *, scope: str) -> Notebook | None:
        check_scope(scope)
        with self._read() as conn:
            row = self._one(
                conn,
                'SELECT namespace, content, version, updated_at FROM notebooks WHERE scope = ? AND namespace = ?',
                (scope, _checked(namespace)),
            )
        return Notebook(row[0], row[1], int(row[2]), parse_time(row[3])) if row else None

    def write_notebook(
        self, namespace: str, content: str, *, scope: str, expected_version: int, operation_id: str | None = None
    ) -> NotebookWrite:
        check_scope(scope)
        namespace = _checked(namespace)
        with self._write() as conn:
            self._dialect.lock_conversation(conn, f'notebook:{scope}:{namespace}')
            if operation_id is not None:
                done = self._one(
                    conn,
                    'SELECT version FROM notebook_ops WHERE scope = ? AND namespace = ? AND operation_id = ?',
                    (scope, namespace, operation_id),
                )
                if done is not None:
                    return NotebookWrite(int(done[0]), replayed=True)
            current = self._current(conn, scope, namespace)
            if current != expected_version:
                raise stale_notebook(namespace, expected_version, current)
            version = current + 1
            self._exec(
                conn,
                'INSERT INTO notebooks (scope, namespace, content, version, updated_at) VALUES (?, ?, ?, ?, ?) '
                'ON CONFLICT (scope, namespace) DO UPDATE SET content = excluded.content, '
                'version = excluded.version, updated_at = excluded.updated_at',
                (scope, namespace, content, version, now_text()),
            )
            if operation_id is not None:
                self._exec(
                    conn,
                    'INSERT INTO notebook_ops (scope, namespace, operation_id, version) VALUES (?, ?, ?, ?)',
                    (scope, namespace, operation_id, version),
                )
        return NotebookWrite(version)

    def delete_notebook(self, namespace: str, *, scope: str) -> bool:
        check_scope(scope)
        namespace = _checked(namespace)
        with self._write() as conn:
            existed = self._current(conn, scope, namespace) > 0
            for table in ('notebooks', 'notebook_ops'):
                self._exec(conn, f'DELETE FROM {table} WHERE scope = ? AND namespace = ?', (scope, namespace))
        return existed

    def _prune_notebooks(self, older_than: datetime, scope: str | None) -> None:
        """Erase the notebooks (of `scope`, or every scope) not written since `older_than`."""
        sql, params = 'SELECT scope, namespace, updated_at FROM notebooks', []
        if scope is not None:
            sql, params = sql + ' WHERE scope = ?', [scope]
        with self._read() as conn:
            rows = self._all(conn, sql, params)
        for row_scope, namespace, updated in rows:
            if parse_time(updated) < older_than:
                self.delete_notebook(namespace, scope=row_scope)

    def _current(self, conn: Connection, scope: str, namespace: str) -> int:
        row = self._one(conn, 'SELECT version FROM notebooks WHERE scope = ? AND namespace = ?', (scope, namespace))
        return int(row[0]) if row else 0


def _checked(namespace: str) -> str:

    if not isinstance(namespace, str) or not namespace:
        raise UserError(f'a notebook namespace must be a non-empty string (a user or tenant id), not {namespace!r}')
    return namespace
