"""`capture_run_messages()`: the messages of the run inside a `with` block, even if it fails.

    with capture_run_messages() as messages:
        try:
            agent.run_sync('...')
        except UnexpectedModelBehavior:
            print(messages)  # what was sent and received before the failure

The list holds the history of the first run started in the block (as pydantic-ai's does), as it
stood when that run ended; runs started after it leave the list alone.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from threadline.messages import ModelMessage

__all__ = ['capture_run_messages', 'captured_messages']


class _Capture:
    __slots__ = ('claimed', 'messages')

    def __init__(self) -> None:
        self.messages: list[ModelMessage] = []
        self.claimed = False


_CAPTURED: contextvars.ContextVar[_Capture | None] = contextvars.ContextVar(
    'threadline_captured_messages', default=None
)


@contextmanager
def capture_run_messages() -> Iterator[list[ModelMessage]]:
    """A list that receives the messages of the first run made inside the block."""
    capture = _Capture()
    token = _CAPTURED.set(capture)
    try:
        yield capture.messages
    finally:
        _CAPTURED.reset(token)


def captured_messages() -> list[ModelMessage] | None:
    """For a run starting now: the list a surrounding `capture_run_messages()` block collects
    into, if any and if no run before it in the block took it."""
    capture = _CAPTURED.get()
    if capture is None or capture.claimed:
        return None
    capture.claimed = True
    return capture.messages
