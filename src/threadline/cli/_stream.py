"""An answer printed as it streams, with a spinner while nothing comes (`chat` and `prompt`).

Rules (each tested):
- Text goes to stdout the moment the model sends it, raw (no markup is read from it); the text of
  each later response of the run starts on a new line after a blank one.
- While the model has sent nothing yet, or a tool runs, a spinner on stderr says so ("thinking",
  "running lookup_order"); it is stopped and erased before any text is written, and it draws only
  when stderr is a terminal, so a pipe or a log gets the answer alone.
- `done()` ends the answer with a newline and says whether any text was printed, so the caller
  prints the output itself when there was none (a structured output, a run that only paused).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterable
from typing import Any, TextIO

from rich.console import Console
from rich.status import Status

from threadline.messages import (
    AgentStreamEvent,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
)

__all__ = ['StreamPrinter']


class StreamPrinter:
    """An `event_stream_handler` that prints a run's text as it comes (see the module docstring)."""

    def __init__(self, notes: Console, *, prefix: str = '', out: TextIO | None = None) -> None:
        self.notes, self.prefix, self.out = notes, prefix, out
        self.printed = False
        self._line_open = False
        self._new_response = False
        self._status: Status | None = None

    @property
    def _stdout(self) -> TextIO:
        return self.out or sys.stdout  # read when used: a test runner may swap sys.stdout

    async def __call__(self, ctx: Any, events: AsyncIterable[AgentStreamEvent]) -> None:
        self.waiting('thinking')  # from the request until its first text
        self._new_response = True
        try:
            async for event in events:
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    self.write(event.part.content)
                elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    self.write(event.delta.content_delta)
                elif isinstance(event, FunctionToolCallEvent):
                    self.waiting(f'running {event.part.tool_name}')
                elif isinstance(event, FunctionToolResultEvent):
                    self.waiting('thinking')
        finally:
            self._stop()  # the next step starts its own; nothing spins after the last

    def waiting(self, what: str) -> None:
        """Show the spinner saying `what` (a terminal's stderr only)."""
        if not self.notes.is_terminal:
            return
        if self._line_open:  # the spinner draws on its own line, below the text so far
            self._stdout.write('\n')
            self._stdout.flush()
            self._line_open = False
        if self._status is None:
            self._status = self.notes.status(f'[dim]{what}…[/]', spinner='dots')
            self._status.start()
        else:
            self._status.update(f'[dim]{what}…[/]')

    def write(self, text: str) -> None:
        """Print `text` now, after the spinner is gone."""
        if not text:
            return
        self._stop()
        if not self.printed:
            text = self.prefix + text
        elif self._new_response:
            text = ('\n' if self._line_open else '') + '\n' + text
        self._new_response = False
        self._stdout.write(text)
        self._stdout.flush()
        self.printed, self._line_open = True, not text.endswith('\n')

    def done(self) -> bool:
        """End the answer (the spinner erased, a final newline); whether any text was printed."""
        self._stop()
        if self._line_open:
            self._stdout.write('\n')
            self._stdout.flush()
            self._line_open = False
        return self.printed

    def _stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
