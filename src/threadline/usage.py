"""Usage accounting, at the import path the documents use (`from threadline.usage import ...`).

`RequestUsage` is one response's tokens, `RunUsage` a run's (or a conversation's) totals, and
`UsageLimits` the caps a run enforces.
"""

from __future__ import annotations

from threadline._public import publish
from threadline.agent import UsageLimits
from threadline.messages import RequestUsage, RunUsage

__all__ = ['RequestUsage', 'RunUsage', 'UsageLimits']

publish(__name__, globals(), __all__)  # after every name above exists
