"""Deferred capabilities: a capability the model loads with the `load_capability` tool.

A capability declared with `defer_loading = True` (and a stable `id`) keeps its tools, its
instructions and its hooks away from the run until the model loads it. The agent then offers
one more tool, `load_capability`, and lists the deferred capabilities (id and description) in
its instructions.

Rules (each tested, and checked against pydantic-ai 2.62 on the same runs):
- What is loaded is derived from the history being sent, never remembered: a capability is
  loaded when a `load_capability` call (`tool_kind='capability-load'`) naming it is followed by
  its successful return, both after the latest `CompactionPart` (`post_compaction_window`). A
  replayed history therefore offers the same tools at every step, and a processor that drops the
  turn holding the pair unloads the capability again (the model may load it again).
- A deferred capability's tools are offered only while it is loaded. A
  `ToolAvailabilityDeltaPart` naming them without a load behind it reveals nothing.
- Loading records the return `{'message': ...}` and a delta naming the capability's tools, in
  the same request; an unknown id, an already active capability, or a second load of the same id
  in one response gets a retry the model can act on, and loads nothing.
- The catalog lists every deferred capability on every request, loaded or not, so the
  instructions stay byte-stable (a provider's prompt cache survives a load).
- A loaded capability's `get_instructions()` joins the run's instructions from the next request
  on. (pydantic-ai records them as an `instruction-delta` part instead; Threadline sends the
  same text in the system voice but keeps no extra part in the history.)
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeGuard

from threadline.agent._context import RunContext
from threadline.agent.tools._tool import Tool
from threadline.exceptions import ModelRetry, UserError
from threadline.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturn,
    ToolReturnPart,
)

if TYPE_CHECKING:
    from threadline.agent._capability import AbstractCapability
    from threadline.agent.tools._tool import Tool

__all__ = [
    'LOAD_CAPABILITY',
    'LOAD_KIND',
    'catalog',
    'check_deferred',
    'is_load_call',
    'load_tool',
    'loaded_capabilities',
    'post_compaction_window',
]

LOAD_CAPABILITY = 'load_capability'
LOAD_KIND = 'capability-load'
_CATALOG_HEAD = (
    'The following capabilities are deferred and can be loaded using the `load_capability` tool. '
    "A capability's tools stay hidden until it is loaded:"
)


def post_compaction_window(messages: Sequence[ModelMessage]) -> Sequence[ModelMessage]:
    """The messages the latest `CompactionPart` leaves the model working from.

    In a response the window starts at the compaction part itself; in a request it starts at the
    first of the consecutive requests around it (they form one turn once repaired). No compaction
    part: the whole history.
    """
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        for position, part in enumerate(message.parts):
            if not isinstance(part, CompactionPart):
                continue
            if isinstance(message, ModelResponse):
                head = ModelResponse(parts=list(message.parts[position:]))
                return [head, *messages[index + 1 :]]
            start = index
            while start > 0 and isinstance(messages[start - 1], ModelRequest):
                start -= 1
            return messages[start:]
    return messages


def is_load_call(part: object) -> TypeGuard[ToolCallPart]:
    """Whether `part` is a `load_capability` call as the history records it (by its kind)."""
    return isinstance(part, ToolCallPart) and part.tool_kind == LOAD_KIND


def _loads(call: ToolCallPart) -> str | None:
    try:
        args = call.args_as_dict()
    except Exception:  # noqa: BLE001 - unparseable arguments load nothing
        return None
    capability_id = args.get('id')
    return capability_id if isinstance(capability_id, str) else None


def loaded_capabilities(messages: Sequence[ModelMessage]) -> set[str]:
    """The capability ids whose load pair is complete in `post_compaction_window(messages)`.

    A return counts when it is a successful `capability-load` return whose content is a mapping
    (a refused load is answered with plain text and loads nothing).
    """
    calls: dict[str, str] = {}
    loaded: set[str] = set()
    for message in post_compaction_window(messages):
        for part in message.parts:
            if is_load_call(part):
                capability_id = _loads(part)
                if capability_id is not None:
                    calls[part.tool_call_id] = capability_id
            elif (
                isinstance(part, ToolReturnPart)
                and part.tool_kind == LOAD_KIND
                and part.outcome in (None, 'success')
                and isinstance(part.content, dict)
                and part.tool_call_id in calls
            ):
                loaded.add(calls[part.tool_call_id])
    return loaded


def catalog(deferred: dict[str, AbstractCapability[Any]]) -> str:
    """The instruction that lists the deferred capabilities (all of them, loaded or not)."""
    lines = [f'- {cid}: {cap.description}' if cap.description else f'- {cid}' for cid, cap in deferred.items()]
    return '\n'.join([_CATALOG_HEAD, *lines])


def load_tool(deferred: dict[str, AbstractCapability[Any]], tools_of: dict[str, list[str]]) -> Tool[Any]:
    """The `load_capability` tool for a run whose deferred capabilities are `deferred`;
    `tools_of[id]` names each one's tools (revealed by the load). Its schema and validator are
    built once (`_load_template`); each run's tool only brings its own function."""

    async def load_capability(ctx: RunContext[Any], id: str) -> ToolReturn[Any]:
        if id not in deferred:
            raise ModelRetry(f'No capability found with id {id!r}.')
        if id in loaded_capabilities(ctx.messages):
            raise ModelRetry(
                f'Capability {id!r} is already active. Use its existing instructions and any tools it '
                'provides; do not call `load_capability` for it again.'
            )
        if _earlier_load_in_response(ctx, id):
            raise ModelRetry(
                f'Capability {id!r} is already being loaded by an earlier `load_capability` call in this '
                'response; do not call `load_capability` for it again.'
            )
        message = f'Capability {id!r} loaded. Its instructions, if any, follow.'
        return ToolReturn({'message': message}, tools=sorted(tools_of.get(id, ())) or None)

    tool = copy.copy(_load_template())
    tool.function = load_capability
    return tool


@functools.cache
def _load_template() -> Tool[Any]:
    """The `load_capability` tool's definition (name, description, schema, kind) and validator."""

    async def load_capability(ctx: RunContext[Any], id: str) -> Any:
        """Load a listed capability whenever it is plausibly relevant to the task.

        Args:
            id: The id of the capability to load.
        """

    tool: Tool[Any] = Tool(
        load_capability,
        takes_ctx=True,
        description=(
            'Load a listed capability whenever it is plausibly relevant to the task. Loading makes the '
            'capability instructions and any tools it provides available.'
        ),
    )
    tool._tool_def = replace(tool.tool_def, tool_kind=LOAD_KIND)
    tool.validate_args({'id': ''})  # builds the validator once, here
    return tool


def _earlier_load_in_response(ctx: RunContext[Any], capability_id: str) -> bool:
    """Whether a call before this one, in the response being executed, loads the same id: the
    first call in the model's order owns the load, whatever order the calls run in."""
    response = next((m for m in reversed(ctx.messages) if isinstance(m, ModelResponse)), None)
    for part in response.parts if response is not None else ():
        if is_load_call(part) and _loads(part) == capability_id:
            return part.tool_call_id != ctx.tool_call_id
    return False


def check_deferred(capabilities: Sequence[AbstractCapability[Any]]) -> dict[str, AbstractCapability[Any]]:
    """The deferred capabilities by id; a deferred one without an id, or two sharing one, is a
    `UserError` naming it."""
    deferred: dict[str, AbstractCapability[Any]] = {}
    for capability in capabilities:
        if not capability.defer_loading:
            continue
        if not capability.id:
            raise UserError(
                f'{type(capability).__name__} has defer_loading=True but no id: give it a stable `id` so the '
                'history can name it'
            )
        if capability.id in deferred:
            raise UserError(f'Two deferred capabilities share the id {capability.id!r}: ids must be unique in a run')
        deferred[capability.id] = capability
    return deferred
