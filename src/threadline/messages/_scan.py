"""The fast validity check behind `repair_messages`, resumable as a history grows.

A history sent to a model is checked before every request. Most histories are already valid, so
the check is one scan with a few sets; `ValidityScan` keeps that scan's state, so a history that
only grew since the last check costs the new messages, not the whole history again.
"""

from __future__ import annotations

from collections.abc import Sequence

from threadline.messages._messages import ModelMessage, ModelRequest, ModelResponse
from threadline.messages._parts import RetryPromptPart, ToolAvailabilityDeltaPart, ToolCallPart, ToolReturnPart

__all__ = ['ValidityScan']


class ValidityScan:
    """Whether a history is in the shape repair leaves alone, checked message by message.

    The shape: only `ModelRequest` and `ModelResponse` (exact types; anything else is left to the
    full repair, which names it), alternating; tool call ids unique; every result after its call
    and answering an open call; no other part between a request's results (tool-availability
    deltas excepted); nothing open at the end, or (`repair_last_response=False`) only the calls of
    the last response, the live frontier.

    `advance` scans messages appended since the last call. Once a message breaks the shape the
    scan stays broken: the caller repairs the whole history and starts a new scan.
    """

    __slots__ = ('_frontier', '_open', '_previous', '_seen', 'broken', 'scanned')

    def __init__(self) -> None:
        self._open: set[str] = set()
        self._seen: set[str] = set()
        self._frontier: set[str] = set()
        self._previous: type | None = None
        self.broken = False
        self.scanned = 0
        """How many messages have been scanned."""

    def copy(self) -> ValidityScan:
        """An independent scan in the same state (sets copied, so each may advance on its own)."""
        other = ValidityScan()
        other._open, other._seen, other._frontier = set(self._open), set(self._seen), set(self._frontier)
        other._previous, other.broken, other.scanned = self._previous, self.broken, self.scanned
        return other

    def valid(self, *, repair_last_response: bool) -> bool:
        """Whether the messages scanned so far need no repair."""
        if self.broken:
            return False
        return not self._open or (not repair_last_response and self._open <= self._frontier)

    def advance(self, messages: Sequence[ModelMessage]) -> bool:
        """Scan `messages[self.scanned:]`; False (and broken from then on) if one breaks the shape."""
        if self.broken:
            return False
        start = self.scanned
        self.scanned = len(messages)
        ok = self._scan(messages[start:] if start else messages)
        self.broken = not ok
        return ok

    def _scan(self, messages: Sequence[ModelMessage]) -> bool:
        # Locals, not attributes, in the loop: this runs over every message of a fresh history.
        open_ids, seen, frontier, previous = self._open, self._seen, self._frontier, self._previous
        request_t, response_t, call_t, return_t, retry_t, delta_t = (
            ModelRequest,
            ModelResponse,
            ToolCallPart,
            ToolReturnPart,
            RetryPromptPart,
            ToolAvailabilityDeltaPart,
        )
        try:
            for message in messages:
                kind = type(message)
                if kind is previous:
                    return False
                previous = kind
                if kind is response_t:
                    frontier = set()
                    for part in message.parts:
                        if type(part) is call_t:
                            call_id = part.tool_call_id
                            if call_id in seen:
                                return False
                            open_ids.add(call_id)
                            seen.add(call_id)
                            frontier.add(call_id)
                    continue
                if kind is not request_t:
                    return False  # not a message: the full path names it
                result_seen = other_after_result = False
                for part in message.parts:
                    part_t = type(part)
                    if part_t is return_t or (part_t is retry_t and part.tool_name is not None):  # type: ignore[union-attr]
                        call_id = part.tool_call_id  # type: ignore[union-attr,assignment]
                        if other_after_result or call_id not in open_ids:
                            return False
                        result_seen = True
                        open_ids.discard(call_id)
                    elif result_seen and part_t is not delta_t:
                        other_after_result = True
            return True
        finally:
            self._frontier, self._previous = frontier, previous
