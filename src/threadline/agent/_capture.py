"""`capture_run_messages()`: the messages of the run inside a `with` block, even if it fails.

    with capture_run_messages() as messages:
        try:
            agent.run_sync('...')
        except UnexpectedModelBehavior:
            print(messages)  # what was sent and received before the failure

The list holds the history of the last run started in the block, as it stood when the run ended.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from threadline.messages import ModelMessage

__all__ = ['capture_run_messages', 'captured_messages']

_CAPTURED: contextvars.ContextVar[list[ModelMessage] | None] = contextvars.ContextVar(
    'threadline_captured_messages', default=None
)


@contextmanager
def capture_run_messages() -> Iterator[list[ModelMessage]]:
    """A list that receives the messages of the run made inside the block."""
    messages: list[ModelMessage] = []
    token = _CAPTURED.set(messages)
    try:
        yield messages
    finally:
        _CAPTURED.reset(token)


def captured_messages() -> list[ModelMessage] | None:
    """The list a surrounding `capture_run_messages()` block collects into, if any."""
    return _CAPTURED.get()
