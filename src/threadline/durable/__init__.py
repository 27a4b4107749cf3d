"""Runs that outlive their process: `DBOSDurability` makes a run inside a DBOS workflow resume
after a crash, its completed model requests and tool calls not made again, and
`wait_for_approval` / `send_approval` let a paused run wait as a workflow (extra `dbos`).

`import threadline.durable` does not load DBOS; the first use of a name here loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from threadline.durable._approval import APPROVAL_TOPIC, send_approval, wait_for_approval
    from threadline.durable._dbos import STEP_NAMES, DBOSDurability, dbos_config, dbos_store_step, durable_history

__all__ = [
    'APPROVAL_TOPIC',
    'STEP_NAMES',
    'DBOSDurability',
    'dbos_config',
    'dbos_store_step',
    'durable_history',
    'send_approval',
    'wait_for_approval',
]
_APPROVAL = {'APPROVAL_TOPIC', 'send_approval', 'wait_for_approval'}


def __getattr__(name: str) -> Any:
    if name in _APPROVAL:  # these modules import dbos, an extra: loaded on first use
        from threadline.durable import _approval

        return getattr(_approval, name)
    if name in __all__:
        from threadline.durable import _dbos

        return getattr(_dbos, name)
    raise AttributeError(name)
