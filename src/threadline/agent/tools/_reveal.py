"""Deferred tools: hidden from the model until a tool reveals them, as the history records it.

Rules (each tested, and checked against pydantic-ai 2.62 on the same runs):
- A tool registered with `defer_loading=True` is offered to the model only once a
  `ToolAvailabilityDeltaPart` in the history being sent names it. The state is derived from
  that history alone: a replayed history offers the same tools at every step, and a processor
  that drops the delta (with the turn that holds it) hides the tool again.
- Only the deltas after the latest `CompactionPart` count (`_load.post_compaction_window`): a
  summary replaces what revealed a tool, so the tool is hidden again until revealed again.
- A deferred capability's tools follow the capability instead: offered while it is loaded
  (see `threadline.agent.tools._load`), whatever the deltas say.
- A call to a deferred tool that is not revealed is answered as a call to an unknown tool.
- `ToolReturn(tools=...)` records a delta right after the tool's result: names deduplicated in
  order of first appearance, names the history (or an earlier result of the same step) already
  revealed left out, other names kept verbatim (they reveal nothing). An empty delta is not
  recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from threadline.agent.tools._load import loaded_capabilities, post_compaction_window
from threadline.messages import ModelMessage, ModelRequest, ToolAvailabilityDeltaPart
from threadline.models import ToolDefinition

__all__ = ['delta_part', 'revealed', 'visible']


def revealed(messages: Sequence[ModelMessage]) -> set[str]:
    """Every tool name a delta in `messages` has revealed."""
    names: set[str] = set()
    for message in post_compaction_window(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolAvailabilityDeltaPart):
                    names.update(part.tools_added)
    return names


def visible(tools: Iterable[ToolDefinition], messages: Sequence[ModelMessage]) -> list[ToolDefinition]:
    """The tools to offer: every tool not deferred, and the deferred ones `messages` revealed."""
    tools = list(tools)
    if not any(t.defer_loading for t in tools):
        return tools
    shown = revealed(messages)
    loaded = loaded_capabilities(messages) if any(t.capability_id for t in tools) else set()
    return [
        t for t in tools if not t.defer_loading or (t.capability_id in loaded if t.capability_id else t.name in shown)
    ]


def delta_part(names: Sequence[str], already: set[str], tool_call_id: str) -> ToolAvailabilityDeltaPart | None:
    """The delta a `ToolReturn(tools=names)` records (None when it adds nothing); `already` is
    updated with what it adds."""
    added = [n for n in dict.fromkeys(names) if n not in already]
    if not added:
        return None
    already.update(added)
    return ToolAvailabilityDeltaPart(tools_added=added, tool_call_id=tool_call_id)
