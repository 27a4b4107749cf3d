"""What the packages that build on a store (`threadline.steps`, `threadline.audit`) need beyond
its public names: `NotNow`, what `AsyncStore._try_in_loop` answers when an operation must go to a
worker thread, `quarantined`, the one error a write to a quarantined conversation raises, and
`to_python_output`, a run's output as the JSON-able value a run record keeps."""

from __future__ import annotations

from threadline.storage._face import NotNow
from threadline.storage._neutral import quarantined, to_python_output

__all__ = ['NotNow', 'quarantined', 'to_python_output']
