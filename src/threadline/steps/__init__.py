"""Step persistence: a run recorded step by step in a store, and read back after a crash.

    agent = Agent(model, capabilities=[StepPersistence(store, scope='tenant-1')])

`StepPersistence` records events, snapshots (positions in the conversation log) and the
tool-effect ledger; `inspect_recovery`, `continue_run` and `fork_run` read a run back. The same
names are exported from `threadline.storage`, where the documents put them. `DURABLE_IO` and
`recorded_idempotency_key` are how a durability capability (`threadline.durable`) has
StepPersistence's store reads and writes recorded as its steps (see `_durable_io.py`).
"""

from __future__ import annotations

from threadline._public import publish
from threadline.steps._durable_io import DURABLE_IO, DurableIO
from threadline.steps._persistence import StepPersistence
from threadline.steps._recovery import continue_run, fork_run, inspect_recovery
from threadline.steps._tool_scope import annotate_tool_effect, recorded_idempotency_key

__all__ = [
    'DURABLE_IO',
    'DurableIO',
    'StepPersistence',
    'annotate_tool_effect',
    'continue_run',
    'fork_run',
    'inspect_recovery',
    'recorded_idempotency_key',
]

_ENGINE_HOOKS = ('DURABLE_IO', 'DurableIO', 'recorded_idempotency_key')
# users import the others from threadline.storage; the hooks for durability engines stay here
publish('threadline.storage', globals(), [n for n in __all__ if n not in _ENGINE_HOOKS])
