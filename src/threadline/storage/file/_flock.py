"""An exclusive lock on a lock file, across processes (POSIX `flock`), for the FileStore's writers.

`fcntl` is imported when a lock is first taken, not when the store's modules load, so
`import threadline.storage` works where there is no `fcntl` (Windows): only a FileStore write
needs it, and there it is a clear error.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from threadline.exceptions import UserError

__all__ = ['exclusive']


@contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Hold `lock_path` (created if missing) exclusively for the block."""
    try:
        import fcntl
    except ImportError:
        raise UserError(
            'FileStore needs POSIX file locks (fcntl), which this platform lacks: use SQLiteStore here'
        ) from None
    with open(lock_path, 'a') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
