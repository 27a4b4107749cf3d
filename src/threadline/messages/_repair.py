"""Making a history provider-valid: pairing analysis and repair.

`repair_messages` is pure and deterministic, and runs three passes in this order:

1. Orphaned tool results are removed: a `ToolReturnPart` (any outcome), or a legacy
   `RetryPromptPart` naming a tool, whose call is absent or only comes later. An interior request
   left empty is dropped; the last message is kept even when emptied, so a history that ended on
   a request still does.
2. Every call without a result gets a synthesized `ToolReturnPart` with `outcome='interrupted'`
   and `{'pydantic_ai_synthesized_tool_return': True}` metadata, including calls whose arguments
   were cut off (the call itself is kept as is). Results answer the oldest open call with their id;
   an id reused by a later response leaves the earlier open call dangling. The synthesized return
   takes the response's timestamp (no wall clock) and goes into the next request after its
   existing tool results, or into a new request (no timestamp, no ids) when none follows. With
   `repair_last_response=False` the calls of the last response are left alone: they are the live
   frontier, still able to run.
3. Consecutive compatible messages merge: two requests unless both carry different non-empty
   instructions (the merged request keeps the right timestamp, the first instructions, only the
   framework's `__pydantic_ai__` metadata, and drops ids and state); two responses only when
   neither names a model, provider or provider response id. Tool results move ahead of other
   parts in a request (stable).

Built-in (provider-side) tool parts, `RetryFeedbackPart` and duplicate results for one call are
left untouched. `repair(repair(h)) == repair(h)` for every history.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

import msgspec

from threadline.messages._messages import ModelMessage, ModelRequest, ModelRequestPart, ModelResponse
from threadline.messages._parts import RetryPromptPart, ToolAvailabilityDeltaPart, ToolCallPart, ToolReturnPart
from threadline.messages._scan import ValidityScan

__all__ = [
    'PairingReport',
    'PartRef',
    'RepairEvent',
    'SYNTHESIZED_METADATA_KEY',
    'pairing_report',
    'repair_messages',
    'repair_report',
]

SYNTHESIZED_METADATA_KEY = 'pydantic_ai_synthesized_tool_return'
INTERRUPTED_TEXT = 'The tool call was interrupted before a result was produced.'
_FRAMEWORK_KEY = '__pydantic_ai__'

RepairClass = Literal[
    'orphan_result_removed', 'interrupted_return_synthesized', 'requests_merged', 'responses_merged', 'parts_reordered'
]


@dataclass(frozen=True)
class RepairEvent:
    """One change repair made. `message_index` is a position in the input history (for a
    synthesized return: the response whose call it answers); `part_index` the part's position."""

    kind: RepairClass
    message_index: int
    part_index: int | None = None
    tool_call_id: str | None = None


@dataclass(frozen=True)
class PartRef:
    """Where a part sits: message and part index, with the tool call id it concerns."""

    message_index: int
    part_index: int
    tool_call_id: str


@dataclass(frozen=True)
class PairingReport:
    """How the tool calls and results of a history pair up (nothing is changed)."""

    open_calls: tuple[PartRef, ...]
    orphaned_results: tuple[PartRef, ...]
    synthesized_returns: tuple[PartRef, ...]
    duplicate_results: tuple[PartRef, ...]

    @property
    def is_paired(self) -> bool:
        return not (self.open_calls or self.orphaned_results)


def _is_result(part: Any) -> TypeGuard[ToolReturnPart | RetryPromptPart]:
    kind = type(part)
    return kind is ToolReturnPart or (kind is RetryPromptPart and part.tool_name is not None)


def _check(messages: Sequence[object]) -> None:
    for index, message in enumerate(messages):
        if type(message) is not ModelRequest and type(message) is not ModelResponse:
            raise TypeError(f'messages[{index}] is a {type(message).__name__}, not a ModelRequest or ModelResponse')


def pairing_report(messages: Sequence[ModelMessage]) -> PairingReport:
    """Open calls, orphaned results, synthesized returns and duplicate results, with positions."""
    _check(messages)
    open_calls: dict[str, deque[PartRef]] = {}
    seen: set[str] = set()
    dangling: list[PartRef] = []
    orphans: list[PartRef] = []
    synthesized: list[PartRef] = []
    duplicates: list[PartRef] = []
    for i, message in enumerate(messages):
        parts: Sequence[Any] = message.parts
        for j, part in enumerate(parts):
            if type(message) is ModelResponse:
                if type(part) is ToolCallPart:
                    call_id = part.tool_call_id
                    queue = open_calls.get(call_id)
                    if queue and queue[0].message_index != i:  # reused by a later response
                        dangling.extend(queue)
                        queue.clear()
                    open_calls.setdefault(call_id, deque()).append(PartRef(i, j, call_id))
                    seen.add(call_id)
            elif _is_result(part):
                ref = PartRef(i, j, part.tool_call_id)
                if (
                    type(part) is ToolReturnPart
                    and isinstance(part.metadata, dict)
                    and part.metadata.get(SYNTHESIZED_METADATA_KEY)
                ):
                    synthesized.append(ref)
                if part.tool_call_id not in seen:
                    orphans.append(ref)
                elif open_calls.get(part.tool_call_id):
                    open_calls[part.tool_call_id].popleft()
                else:
                    duplicates.append(ref)
    dangling.extend(ref for refs in open_calls.values() for ref in refs)
    dangling.sort(key=lambda r: (r.message_index, r.part_index))
    return PairingReport(tuple(dangling), tuple(orphans), tuple(synthesized), tuple(duplicates))


def repair_messages(messages: Sequence[ModelMessage], *, repair_last_response: bool = True) -> list[ModelMessage]:
    """A provider-valid copy of `messages` (see the module docstring for the rules)."""
    return repair_report(messages, repair_last_response=repair_last_response)[0]


def repair_report(
    messages: Sequence[ModelMessage], *, repair_last_response: bool = True
) -> tuple[list[ModelMessage], list[RepairEvent]]:
    """The repaired history and the events that produced it, in the order they were applied."""
    if _looks_valid(messages, repair_last_response):  # which also means every message is well typed
        return list(messages), []
    _check(messages)
    found = _diagnose(messages, repair_last_response)
    events: list[RepairEvent] = []
    current, origins, dropped_any = _apply_pairing(messages, found, events)
    if dropped_any or found.adjacent or found.misordered:
        return _merge(list(zip(origins, current, strict=True)), events, check_order=found.misordered), events
    return current, events


def _looks_valid(messages: Sequence[ModelMessage], repair_last_response: bool) -> bool:
    """The common case, checked fast (see `ValidityScan` for the shape)."""
    scan = ValidityScan()
    return scan.advance(messages) and scan.valid(repair_last_response=repair_last_response)


@dataclass
class _Diagnosis:
    orphans: list[tuple[int, int, str]]
    dangling: list[tuple[int, int, ToolCallPart]]
    adjacent: bool
    misordered: bool


def _diagnose(messages: Sequence[ModelMessage], repair_last_response: bool) -> _Diagnosis:
    """One scan that finds everything the pairing passes act on: orphaned results (a result whose
    call has not appeared yet), dangling calls (FIFO matching; an id reused by a later response
    leaves the earlier open call dangling), adjacent mergeable messages and misordered requests."""
    open_calls: dict[str, list[tuple[int, int, ToolCallPart]]] = {}
    seen: set[str] = set()
    orphans: list[tuple[int, int, str]] = []
    dangling: list[tuple[int, int, ToolCallPart]] = []
    previous: type | None = None
    last_response = -1
    adjacent = misordered = False
    response_t, request_t, call_t, return_t, retry_t, delta_t = (
        ModelResponse,
        ModelRequest,
        ToolCallPart,
        ToolReturnPart,
        RetryPromptPart,
        ToolAvailabilityDeltaPart,
    )
    for i, message in enumerate(messages):
        kind = type(message)
        if kind is previous and (kind is request_t or _synthetic(message)):  # type: ignore[arg-type]
            adjacent = True
        previous = kind
        if kind is response_t:
            last_response = i
            for j, part in enumerate(message.parts):
                if type(part) is call_t:
                    call_id = part.tool_call_id
                    queue = open_calls.get(call_id)
                    if queue is None:
                        open_calls[call_id] = [(i, j, part)]
                        seen.add(call_id)
                    else:
                        if queue and queue[0][0] != i:  # reused by a later response
                            dangling.extend(queue)
                            queue.clear()  # the id keeps its place: the order of synthesized returns follows it
                        queue.append((i, j, part))
            continue
        result_seen = other_after_result = False
        for j, part in enumerate(message.parts):
            part_t = type(part)
            if part_t is return_t or (part_t is retry_t and part.tool_name is not None):  # type: ignore[union-attr]
                call_id = part.tool_call_id  # type: ignore[union-attr,assignment]
                if call_id not in seen:
                    orphans.append((i, j, call_id))
                    continue
                if other_after_result:
                    misordered = True
                result_seen = True
                queue = open_calls[call_id]
                if queue:
                    del queue[0]
            elif result_seen and part_t is not delta_t:
                other_after_result = True
    dangling.extend(entry for queue in open_calls.values() for entry in queue)
    if not repair_last_response:
        dangling = [entry for entry in dangling if entry[0] != last_response]
    return _Diagnosis(orphans, dangling, adjacent, misordered)


def _apply_pairing(
    messages: Sequence[ModelMessage], found: _Diagnosis, events: list[RepairEvent]
) -> tuple[list[ModelMessage], list[int], bool]:
    """Remove the orphans and add the synthesized returns, touching only the messages concerned.
    Returns the messages, each one's position in the input, and whether a message was dropped."""
    current: list[ModelMessage] = list(messages)
    dropped: set[int] = set()
    last = len(current) - 1
    by_message: dict[int, set[int]] = {}
    for i, j, call_id in found.orphans:
        by_message.setdefault(i, set()).add(j)
        events.append(RepairEvent('orphan_result_removed', i, j, call_id))
    for i, positions in by_message.items():
        kept = [p for j, p in enumerate(current[i].parts) if j not in positions]
        if kept or i == last:
            current[i] = msgspec.structs.replace(current[i], parts=kept)
        else:
            dropped.add(i)
    inserted: dict[int, ModelRequest] = {}
    by_response: dict[int, list[tuple[int, ToolCallPart]]] = {}
    for i, j, call in sorted(found.dangling, key=lambda entry: entry[0]):
        by_response.setdefault(i, []).append((j, call))
    for i, calls in by_response.items():
        response = current[i]
        assert isinstance(response, ModelResponse)  # a dangling call is in the response that made it
        synthesized = []
        for j, call in calls:
            synthesized.append(_interrupted_return(call, response))
            events.append(RepairEvent('interrupted_return_synthesized', i, j, call.tool_call_id))
        following = next((k for k in range(i + 1, len(current)) if k not in dropped), None)
        if following is not None and type(current[following]) is ModelRequest:
            parts = list(current[following].parts)
            at = max((k + 1 for k, p in enumerate(parts) if _is_result(p)), default=0)
            parts[at:at] = synthesized
            current[following] = msgspec.structs.replace(current[following], parts=parts)
        else:
            inserted[i] = ModelRequest(parts=list[Any](synthesized))
    if not dropped and not inserted:
        return current, list(range(len(current))), False
    out: list[ModelMessage] = []
    origins: list[int] = []
    for i, message in enumerate(current):
        if i not in dropped:
            out.append(message)
            origins.append(i)
        if i in inserted:
            out.append(inserted[i])
            origins.append(i)
    return out, origins, bool(dropped)


def _interrupted_return(call: ToolCallPart, response: ModelResponse) -> ToolReturnPart:
    return ToolReturnPart(
        call.tool_name,
        INTERRUPTED_TEXT,
        call.tool_call_id,
        tool_kind=call.tool_kind,
        metadata={SYNTHESIZED_METADATA_KEY: True},
        timestamp=response.timestamp,
        outcome='interrupted',
    )


def _results_first(parts: Sequence[ModelRequestPart]) -> list[ModelRequestPart]:
    """Merged requests: tool results and legacy retry prompts first, everything else after (stable)."""
    first = [p for p in parts if type(p) is ToolReturnPart or type(p) is RetryPromptPart]
    return first + [p for p in parts if not (type(p) is ToolReturnPart or type(p) is RetryPromptPart)]


def _between_results(parts: Sequence[ModelRequestPart]) -> tuple[int, int] | None:
    """(first, last) result positions when a movable part sits between them, else None."""
    result_positions = [k for k, p in enumerate(parts) if _is_result(p)]
    if len(result_positions) < 2:
        return None
    first, last = result_positions[0], result_positions[-1]
    for part in parts[first:last]:
        if not _is_result(part) and type(part) is not ToolAvailabilityDeltaPart:
            return first, last
    return None


def _gather_results(parts: Sequence[ModelRequestPart], first: int, last: int) -> list[ModelRequestPart]:
    """Move the parts sitting between the first and last tool result to just after the last one."""
    span = parts[first : last + 1]
    kept = [p for p in span if _is_result(p) or type(p) is ToolAvailabilityDeltaPart]
    moved = [p for p in span if not (_is_result(p) or type(p) is ToolAvailabilityDeltaPart)]
    return [*parts[:first], *kept, *moved, *parts[last + 1 :]]


def _framework_metadata(left: ModelRequest, right: ModelRequest) -> dict[str, Any] | None:
    merged: dict[str, Any] = {}
    for message in (left, right):
        if message.metadata and isinstance(message.metadata.get(_FRAMEWORK_KEY), dict):
            merged.update(message.metadata[_FRAMEWORK_KEY])
    return {_FRAMEWORK_KEY: merged} if merged else None


def _merge(
    indexed: list[tuple[int, ModelMessage]], events: list[RepairEvent], *, check_order: bool
) -> list[ModelMessage]:
    out: list[ModelMessage] = []
    origin: list[int] = []
    for i, message in indexed:
        previous = out[-1] if out else None
        if (
            type(message) is ModelRequest
            and type(previous) is ModelRequest
            and not (previous.instructions and message.instructions and previous.instructions != message.instructions)
        ):
            out[-1] = ModelRequest(
                parts=_results_first([*previous.parts, *message.parts]),
                timestamp=message.timestamp if message.timestamp is not None else previous.timestamp,
                instructions=previous.instructions or message.instructions,
                metadata=_framework_metadata(previous, message),
            )
            events.append(RepairEvent('requests_merged', i))
            continue
        if (
            type(message) is ModelResponse
            and type(previous) is ModelResponse
            and _synthetic(previous)
            and _synthetic(message)
        ):
            out[-1] = msgspec.structs.replace(previous, parts=[*previous.parts, *message.parts])
            events.append(RepairEvent('responses_merged', i))
            continue
        out.append(message)
        origin.append(i)
    for k, message in enumerate(out if check_order else ()):
        if type(message) is ModelRequest:
            span = _between_results(message.parts)
            if span is not None:
                out[k] = msgspec.structs.replace(message, parts=_gather_results(message.parts, *span))
                events.append(RepairEvent('parts_reordered', origin[k]))
    return out


def _synthetic(response: ModelResponse) -> bool:
    return not (response.provider_response_id or response.provider_name or response.model_name)
