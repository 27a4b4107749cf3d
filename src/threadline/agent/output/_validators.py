"""The agent's output validators, and the context an output tool call is validated in.

Rules (pydantic-ai 2.62's):
- a validator's context describes the output: `retry` is the output's retry count and
  `max_retries` the agent's output budget; for an output tool, `tool_name` and `tool_call_id`
  are the call's;
- an output tool call's own validation and processing see that call's retry count and the
  tool's own budget (`ToolOutput(max_retries=)`), else the agent's;
- `partial=True` (a streamed output still arriving) sets `ctx.partial_output`.
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from threadline.agent._context import RunContext
    from threadline.agent._state import RunState
    from threadline.messages import ToolCallPart

__all__ = ['output_call_context', 'validate_output']


def output_call_context(state: RunState, call: ToolCallPart, *, partial: bool = False) -> RunContext[Any]:
    """The context an output tool call's arguments are validated and processed in."""
    limit = state.output.max_retries(call.tool_name)
    ctx = state.ctx.for_tool(
        tool_name=call.tool_name,
        tool_call_id=call.tool_call_id,
        retry=state.ctx.retries.get(call.tool_name, 0),
        max_retries=state.max_output_retries if limit is None else limit,
        approved=False,
    )
    return replace(ctx, partial_output=True) if partial else ctx


async def validate_output(
    state: RunState, output: Any, ctx: RunContext[Any] | None = None, *, partial: bool = False
) -> Any:
    """`output` through the agent's output validators, in `ctx` (an output call's, see
    `output_call_context`) or the run's own context for a text output."""
    if not state.output_validators:
        return output
    if ctx is None:
        ctx = replace(
            state.ctx, retry=state.output_retries, max_retries=state.max_output_retries, partial_output=partial
        )
    else:
        ctx = replace(ctx, max_retries=state.max_output_retries)
    for validator in state.output_validators:
        takes_ctx = len(inspect.signature(validator).parameters) >= 2
        result = validator(ctx, output) if takes_ctx else validator(output)
        if inspect.isawaitable(result):
            result = await result
        output = result
    return output
