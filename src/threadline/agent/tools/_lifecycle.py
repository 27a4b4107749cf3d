"""The hooks around one tool call: the validation lifecycle and the execution lifecycle.

Rules (pydantic-ai 2.62's):
- validation is `before_tool_validate`, the arguments' schema and the tool's `args_validator`
  (their errors to `on_tool_validate_error` hooks, which may recover), then
  `after_tool_validate`;
- a call may wait for approval or an outside result only once its arguments are valid: a
  deferral from `before_tool_validate`, `on_tool_validate_error`, or `wrap_tool_validate` before
  its handler validated the arguments is a `UserError`; the args validator's deferral is held
  until `after_tool_validate` accepted the arguments;
- execution is `before_tool_execute`, the tool (through `wrap_tool_body` hooks), then
  `after_tool_execute`; an error goes to `on_tool_execute_error` hooks, and one they recover
  records the call as failed;
- `SkipToolValidation` from a validation hook supplies the arguments (no `after_tool_validate`),
  and `SkipToolExecution` from an execution hook or the tool supplies the result (no error
  hooks, no `after_tool_execute`): control flow, not failures.
"""

from __future__ import annotations

import contextlib
from functools import partial
from typing import TYPE_CHECKING, Any

from threadline.agent.tools._tool import Tool, ToolArgsError
from threadline.exceptions import ApprovalRequired, CallDeferred, ModelRetry, SkipToolExecution, ToolFailed, UserError
from threadline.messages import ToolCallPart

if TYPE_CHECKING:
    from threadline.agent._chain import CapabilityChain
    from threadline.agent._context import RunContext

__all__ = ['ToolLifecycle', 'deferred_unvalidated']


class ToolLifecycle:
    """The lifecycles of one step's tool calls, with what they learn about each call."""

    def __init__(self, chain: CapabilityChain[Any]) -> None:
        self.chain = chain
        self.validated: set[str] = set()
        """Tool call ids whose arguments passed validation (a later deferral may then wait)."""
        self.outcomes: dict[str, str] = {}
        """Tool call id -> 'failed' once an error hook recovered it ('success' until then)."""

    async def validate(self, ctx: RunContext[Any], call: ToolCallPart, tool: Tool[Any], raw: Any) -> dict[str, Any]:
        """The validation lifecycle: `before_tool_validate`, validation (errors to the
        `on_tool_validate_error` hooks), `after_tool_validate`."""
        chain, tool_def = self.chain, tool.tool_def
        self.validated.discard(call.tool_call_id)
        try:
            raw = await chain.before_tool_validate(ctx, call, tool_def, raw)
        except (ApprovalRequired, CallDeferred) as exc:
            raise deferred_unvalidated('before_tool_validate', exc) from exc
        held: ApprovalRequired | CallDeferred | None = None  # the args validator's, once hooks passed
        try:
            args = tool.validate_args(raw)
            try:
                await tool.check_args(ctx, args)
            except (ApprovalRequired, CallDeferred) as exc:
                held = exc
        except (ToolArgsError, ModelRetry) as error:
            if not chain.has('on_tool_validate_error'):
                raise
            try:
                args = await chain.on_tool_validate_error(ctx, call, tool_def, raw, error)
            except (ApprovalRequired, CallDeferred) as exc:
                raise deferred_unvalidated('on_tool_validate_error', exc) from exc
        self.validated.add(call.tool_call_id)  # from here on a deferral may wait
        args = await chain.after_tool_validate(ctx, call, tool_def, args)
        if held is not None:
            raise held
        return args

    async def run_tool(self, ctx: RunContext[Any], call: ToolCallPart, tool: Tool[Any], args: dict[str, Any]) -> Any:
        """The execution lifecycle: `before_tool_execute`, the tool (errors to the
        `on_tool_execute_error` hooks; a recovered error records the call as failed),
        `after_tool_execute`."""
        chain, tool_def = self.chain, tool.tool_def
        try:
            args = await chain.before_tool_execute(ctx, call, tool_def, args)
            if chain.has('wrap_tool_body'):
                result = await chain.wrap_tool_body(ctx, call, tool_def, args, partial(tool.call, ctx))
            else:
                result = await tool.call(ctx, args)
            return await chain.after_tool_execute(ctx, call, tool_def, args, result)
        except (ApprovalRequired, CallDeferred) as waiting:
            # Not a failure: the call waits outside the run (see `ToolStep._function_call`). The error hooks
            # still hear of it, so a ledger closes the row (nothing was done), whatever they answer.
            with contextlib.suppress(Exception):
                await chain.on_tool_execute_error(ctx, call, tool_def, args, waiting)
            raise
        except (ToolFailed, SkipToolExecution):  # control flow, not errors
            raise
        except Exception as error:  # noqa: BLE001 - capabilities may recover; otherwise re-raised
            result = await chain.on_tool_execute_error(ctx, call, tool_def, args, error)
            self.outcomes[call.tool_call_id] = 'failed'
            return result


def deferred_unvalidated(hook: str, exc: ApprovalRequired | CallDeferred) -> UserError:
    """A deferral raised before the call's arguments were valid: whoever resolves a deferred call
    is shown its arguments, so it may only wait once they are (as in the reference)."""
    return UserError(
        f'`{hook}` raised `{type(exc).__name__}`, but a tool call can only wait for approval or an outside result '
        "once its arguments are valid: raise it from `after_tool_validate`, the tool's `args_validator`, "
        '`before_tool_execute` or the tool itself.'
    )
