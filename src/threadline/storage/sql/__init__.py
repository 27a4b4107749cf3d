"""What the SQL backends share: the log, steps, seals, audit records, notebooks and leases written
once over a `Dialect`. Each dialect is one file beside this folder (`storage/sqlite.py`,
`storage/postgres.py`); nothing here names a database."""

from __future__ import annotations

from threadline.storage.sql._store import SQLStore

__all__ = ['SQLStore']
