"""Runs that outlive their process: `DBOSDurability` makes a run inside a DBOS workflow resume
after a crash, its completed model requests and tool calls not made again (extra `dbos`).

`import threadline.durable` does not load DBOS; `DBOSDurability` loads it on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from threadline.durable._dbos import STEP_NAMES, DBOSDurability, dbos_config, durable_history

__all__ = ['STEP_NAMES', 'DBOSDurability', 'dbos_config', 'durable_history']


def __getattr__(name: str) -> Any:
    if name in __all__:  # the capability's module imports dbos, an extra: loaded on first use
        from threadline.durable import _dbos

        return getattr(_dbos, name)
    raise AttributeError(name)
