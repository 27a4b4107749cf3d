"""`MemoryStore`: a store that lives in the process and disappears with it (tests, notebooks).

It is the SQLite store on a private in-memory database, so it behaves exactly like the durable
stores (revisions, forks, search) without touching the disk.
"""

from __future__ import annotations

from threadline.storage.sqlite import SQLiteStore
from threadline.trust.sealing import StoreSeal

__all__ = ['MemoryStore']


class MemoryStore(SQLiteStore):
    """An in-process store with the full store behaviour and no persistence."""

    in_process = True  # no I/O: operations run in the event loop, without a thread hop

    def __init__(self) -> None:
        super().__init__(':memory:', synchronous='OFF', seal=StoreSeal.ephemeral())

    def __repr__(self) -> str:
        return 'MemoryStore()'
