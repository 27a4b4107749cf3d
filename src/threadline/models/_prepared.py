"""A history as a model is sent it, kept between requests so a growing history costs only its
new messages.

Before every model request the history is checked (does it need repair?) and rendered for the
model's profile. Both are functions of the messages, left to right, so a history that only grew
since the last request needs only its new messages checked and rendered. `PreparedHistory`
remembers what it did, recognises the same messages by identity, and falls back to the full
pass whenever it cannot be sure.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from operator import attrgetter

from threadline.messages import ModelMessage, ValidityScan, parts_assignments, repair_messages
from threadline.models._base import ModelProfile
from threadline.models._render import render_history, render_into

__all__ = ['PreparedHistory']

_PARTS = attrgetter('parts')


class PreparedHistory:
    """The checked and rendered form of a history, brought up to date request by request.

    What counts as the history it already prepared (the rules):

    - The messages it prepared must open the history given, at the same positions: a message
      removed, inserted or replaced anywhere is noticed and the whole history is prepared again.
      The first and last of them must be the very objects; the rest are compared in C, identity
      first, so a message replaced by an equal copy still counts as prepared (it renders the same).
    - A message given a new parts list (`message.parts = [...]`) is noticed: any such assignment in
      the process moves `parts_assignments()`, and then every parts list is compared once.
    - A part, or a parts list, edited in place is not noticed. As document 001 says of the
      instrumentation's serialize-once rule, mutating a message already in the history in place
      is not supported.
    - Another profile (by value) renders the whole history again (the check is kept).
    - A history that needs repair is repaired and rendered whole, and nothing is kept from it.

    Not safe to share between concurrent runs: each run holds its own (`copy`).
    """

    __slots__ = ('_assigned', '_first_request_seen', '_parts', '_profile', '_rendered', '_scan', '_skipped', '_source')

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._source: list[ModelMessage] = []
        self._parts: list[object] = []
        self._assigned = parts_assignments()
        self._scan = ValidityScan()
        self._profile: ModelProfile | None = None
        self._rendered: list[ModelMessage] = []
        self._skipped: set[str] = set()
        self._first_request_seen = False

    def copy(self) -> PreparedHistory:
        """An independent copy (the messages themselves are shared, never changed)."""
        other = PreparedHistory()
        other._source, other._parts, other._assigned = list(self._source), list(self._parts), self._assigned
        other._scan = self._scan.copy()
        other._profile, other._rendered, other._skipped = self._profile, list(self._rendered), set(self._skipped)
        other._first_request_seen = self._first_request_seen
        return other

    def opens(self, messages: Sequence[ModelMessage]) -> bool:
        """Whether the messages prepared so far open `messages` (see the class rules)."""
        source = self._source
        n = len(source)
        if n == 0:
            return True
        if len(messages) < n or messages[0] is not source[0] or messages[n - 1] is not source[n - 1]:
            return False
        if not self._same_prefix(messages, n):
            return False
        assigned = parts_assignments()
        if assigned != self._assigned:
            if list(map(_PARTS, islice(messages, n))) != self._parts:
                return False
            self._assigned = assigned
        return True

    def _same_prefix(self, messages: Sequence[ModelMessage], n: int) -> bool:
        """`messages[:n] == self._source`, compared in C, identity first, without copying the prefix."""
        source = self._source
        if type(messages) is not list:
            return list(messages[:n]) == source
        if len(messages) == n:
            return messages == source
        source.extend(messages[n:])  # compared whole, then taken back out: no copy of the long part
        try:
            return messages == source
        finally:
            del source[n:]

    def needs_repair(self, messages: Sequence[ModelMessage], *, repair_last_response: bool) -> bool:
        """Whether `messages` would be changed by `repair_messages(messages, repair_last_response=...)`."""
        self._take(messages)
        if not self._scan.advance(self._source):
            return True
        return not self._scan.valid(repair_last_response=repair_last_response)

    def prepare(self, messages: Sequence[ModelMessage], profile: ModelProfile) -> tuple[list[ModelMessage], set[str]]:
        """What `render_history(repair_messages(messages), profile)` returns, in O(new messages)
        when `messages` continues the history prepared last time."""
        if self.needs_repair(messages, repair_last_response=True):
            self._reset()
            return render_history(repair_messages(messages), profile)
        return self.render(profile)

    def render(self, profile: ModelProfile) -> tuple[list[ModelMessage], set[str]]:
        """The messages taken in so far (by `needs_repair`, which found them valid), rendered for
        `profile`, with the opaque kinds skipped."""
        if profile is not self._profile and profile != self._profile:  # profiles are frozen values
            self._profile, self._rendered, self._skipped, self._first_request_seen = profile, [], set(), False
        done = len(self._rendered)
        source = self._source
        if done < len(source):
            new = source[done:] if done else source
            self._first_request_seen = render_into(
                self._rendered, new, profile, self._skipped, first_request_seen=self._first_request_seen
            )
        return list(self._rendered), set(self._skipped)

    def _take(self, messages: Sequence[ModelMessage]) -> None:
        if self._scan.broken or not self.opens(messages):
            self._reset()
        n = len(self._source)
        if len(messages) > n:
            new = messages[n:] if n else messages
            self._source.extend(new)
            self._parts.extend(map(_PARTS, new))
