"""The FileStore backend: each conversation a JSON-lines file, each run's records a folder.

Plain files a person can read, copy and `grep`; every write appends whole lines under an advisory
lock and syncs before it returns. The operations live in this folder; the contract they implement
is `threadline.storage._contract`.
"""

from __future__ import annotations

from threadline._public import publish
from threadline.storage.file._store import FileBackend, FileStore

__all__ = ['FileBackend', 'FileStore']

publish(__name__, globals(), __all__)  # after every name above exists
