"""Where there is no `fcntl` (Windows), `threadline.storage` and its SQLite store still work; only a
FileStore write needs POSIX locks, and it says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import sys
sys.modules['fcntl'] = None  # as on a platform without it: importing it raises ImportError
from threadline.storage import FileStore, SQLiteStore
from threadline.storage.testing import turn
import threadline.memory.anthropic
store = SQLiteStore(':memory:')
store.sync.append('c', turn(0), scope='s')
assert len(store.sync.load('c', scope='s').messages) == 4
try:
    FileStore(sys.argv[1]).sync.append('c', turn(0), scope='s')
except Exception as error:
    print(type(error).__name__, error)
"""


def test_storage_imports_and_sqlite_works_without_fcntl(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, '-c', PROBE, str(tmp_path / 'files')], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('UserError FileStore needs POSIX file locks (fcntl)')
