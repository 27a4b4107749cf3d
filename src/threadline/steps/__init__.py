"""Step persistence: a run recorded step by step in a store, and read back after a crash.

    agent = Agent(model, capabilities=[StepPersistence(store, scope='tenant-1')])

`StepPersistence` records events, snapshots (positions in the conversation log) and the
tool-effect ledger; `inspect_recovery`, `continue_run` and `fork_run` read a run back. The same
names are exported from `threadline.storage`, where the documents put them.
"""

from __future__ import annotations

from threadline._public import publish
from threadline.steps._persistence import StepPersistence, annotate_tool_effect
from threadline.steps._recovery import continue_run, fork_run, inspect_recovery

__all__ = ['StepPersistence', 'annotate_tool_effect', 'continue_run', 'fork_run', 'inspect_recovery']

publish('threadline.storage', globals(), __all__)  # users import them from threadline.storage
