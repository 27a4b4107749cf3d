"""One function tool call in two phases: checked (the application's decision, then the arguments
validated), then run.

Rules (pydantic-ai 2.62's, probed):
- A step checks its calls one after another, in response order, before any of them runs; each
  call's `FunctionToolCallEvent` follows its check and says whether its arguments were valid
  (`args_valid`: None when a deferred result or a denial answered the call unchecked).
- Calls that wait for approval or an outside result are checked after the others ran.
- A deferral the arguments' validator raises is held: the call reported valid, it waits when it
  would have run. A retry budget that runs out in the check still emits the call's event
  (`args_valid=False`) before the run fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from threadline.agent._cut_short import check_incomplete_tool_call
from threadline.agent.tools._deferred import Decision, Waiting, decision_for, external_result
from threadline.agent.tools._lifecycle import ToolLifecycle, deferred_unvalidated
from threadline.agent.tools._tool import Tool, ToolArgsError
from threadline.exceptions import (
    ApprovalRequired,
    CallDeferred,
    ModelRetry,
    SkipToolExecution,
    SkipToolValidation,
    ToolFailed,
    UnexpectedModelBehavior,
)
from threadline.messages import RetryInfo, ToolCallPart, ToolReturn, ToolReturnPart, UserContent, UserPromptPart

if TYPE_CHECKING:
    from threadline.agent._context import RunContext
    from threadline.agent._state import RunState
    from threadline.agent.output._deferred_types import DeferredToolResults
    from threadline.messages import ModelRequestPart

__all__ = ['Checked', 'FunctionCalls']

Deferral = ApprovalRequired | CallDeferred


@dataclass
class Checked:
    """A call after its check: its answer already (`part`), or the arguments it runs with."""

    call: ToolCallPart
    tool: Tool[Any]
    part: ToolReturnPart | None = None
    args: dict[str, Any] | None = None
    ctx: RunContext[Any] | None = None
    limit: int = 0
    wait: str | None = None
    """The tool's kind when the call waits for approval or an outside result."""
    deferral: Deferral | None = None
    """What the arguments' validator raised, raised again when the call would run."""
    args_valid: bool | None = None


class FunctionCalls:
    """What a step knows about its function calls while it checks and runs them (the base of
    `ToolStep`, which decides which calls run and in what order)."""

    state: RunState
    deferred: DeferredToolResults | None
    waiting: Waiting
    lifecycle: ToolLifecycle
    reveals: dict[str, list[str]]
    trailing: list[ModelRequestPart]
    contents: dict[str, str | list[UserContent]]
    step_retries: dict[str, int]

    def waits(self, call: ToolCallPart, tool: Tool[Any]) -> bool:
        """Whether the call waits for approval or an outside result (no decision answers it)."""
        decision = decision_for(self.deferred, call)
        undecided = not (decision.has_result or decision.denied is not None or decision.approved)
        return undecided and tool.tool_def.kind in ('unapproved', 'external')

    async def _function_call(self, call: ToolCallPart, tool: Tool[Any]) -> ToolReturnPart | None:
        """The call checked and run: its result, or None when it waits outside the run."""
        return await self.run_checked(await self.check(call, tool))

    async def check(self, call: ToolCallPart, tool: Tool[Any]) -> Checked:
        """The application's decision on the call, else its arguments through the validation
        lifecycle (a retry or a failure is the call's answer)."""
        decision = decision_for(self.deferred, call)
        if decision.has_result:
            answer = external_result(call, decision.result)
            part = self._unpack(call, answer, 'success') if isinstance(answer, ToolReturn) else answer
            return Checked(call, tool, part=part)
        if decision.denied is not None:
            return Checked(
                call, tool, part=ToolReturnPart(call.tool_name, decision.denied, call.tool_call_id, outcome='denied')
            )
        kind = tool.tool_def.kind
        checked = Checked(
            call, tool, wait=kind if kind in ('unapproved', 'external') and not decision.approved else None
        )
        checked.limit = self.state.max_retries if tool.max_retries is None else tool.max_retries
        checked.ctx = self._tool_context(call, checked.limit, decision)
        raw = decision.override_args if decision.override_args is not None else call.args
        try:
            checked.args = await self._validated(checked, raw)
        except ToolFailed as failed:  # done, and failed for good: no retry asked, none counted
            checked.part = ToolReturnPart(call.tool_name, failed.message, call.tool_call_id, outcome='failed')
        except ToolArgsError as exc:
            checked.part = self._retry(call, exc.errors, 'validation_error', checked.limit)
        except ModelRetry as retry:
            checked.part = self._retry(call, retry.message, 'model_retry', checked.limit)
        except (ApprovalRequired, CallDeferred) as exc:
            checked.deferral = exc
        checked.args_valid = checked.part is None
        return checked

    def _tool_context(self, call: ToolCallPart, limit: int, decision: Decision) -> RunContext[Any]:
        state = self.state
        return state.ctx.for_tool(
            tool_name=call.tool_name,
            tool_call_id=call.tool_call_id,
            retry=state.ctx.retries.get(call.tool_name, 0),
            max_retries=limit,
            approved=decision.approved,
            metadata=decision.metadata,
        )

    async def _validated(self, checked: Checked, raw: Any) -> dict[str, Any]:
        call, tool, ctx = checked.call, checked.tool, checked.ctx
        assert ctx is not None
        validate = partial(self.lifecycle.validate, ctx, call, tool)
        try:
            # With no wrap hooks the chain calls the handler straight away.
            return await self.state.capabilities.wrap_tool_validate(ctx, call, tool.tool_def, raw, validate)
        except SkipToolValidation as skip:  # a hook vouched for the arguments
            self.lifecycle.validated.add(call.tool_call_id)
            return skip.validated_args
        except (ApprovalRequired, CallDeferred) as exc:
            if call.tool_call_id not in self.lifecycle.validated:
                raise deferred_unvalidated('wrap_tool_validate', exc) from exc
            raise

    async def run_checked(self, checked: Checked) -> ToolReturnPart | None:
        """The checked call's result: its answer, None when it waits, or the tool's result
        through the execution lifecycle."""
        call = checked.call
        if checked.part is not None:
            return checked.part
        if checked.deferral is not None or checked.wait is not None:
            if checked.deferral is not None:
                self.waiting.raised(call, checked.deferral)
            else:
                self.waiting.add(call, checked.wait)  # type: ignore[arg-type]
            return None
        try:
            return await self._executed(checked)
        except ToolFailed as failed:
            return ToolReturnPart(call.tool_name, failed.message, call.tool_call_id, outcome='failed')
        except (ApprovalRequired, CallDeferred) as exc:
            self.waiting.raised(call, exc)
            return None

    async def _executed(self, checked: Checked) -> ToolReturnPart:
        state, call, tool, ctx, args = self.state, checked.call, checked.tool, checked.ctx, checked.args
        assert ctx is not None and args is not None
        self.lifecycle.outcomes[call.tool_call_id] = 'success'
        try:
            execute = partial(self.lifecycle.run_tool, ctx, call, tool)
            result = await state.capabilities.wrap_tool_execute(ctx, call, tool.tool_def, args, execute)
        except SkipToolExecution as skip:  # a hook answered in the tool's place
            result = skip.result
        except ModelRetry as retry:
            return self._retry(call, retry.message, 'model_retry', checked.limit)
        outcome = self.lifecycle.outcomes.pop(call.tool_call_id)
        for usage in (state.ctx.usage, state.run_usage):
            usage.tool_calls += 1  # as in the reference: a call counts once it ran, not when it asked for a retry
        if outcome == 'success':
            state.ctx.retries.pop(call.tool_name, None)  # a success ends the tool's run of retries
        if isinstance(result, ToolReturnPart):
            return result
        if isinstance(result, ToolReturn):
            return self._unpack(call, result, outcome)
        return ToolReturnPart(call.tool_name, result, call.tool_call_id, outcome=outcome)  # type: ignore[arg-type]

    def _unpack(self, call: ToolCallPart, result: ToolReturn[Any], outcome: str) -> ToolReturnPart:
        if result.tools:
            self.reveals[call.tool_call_id] = list(result.tools)
        if result.content:
            content = result.content if isinstance(result.content, str) else list(result.content)
            self.trailing.append(UserPromptPart(content))
            self.contents[call.tool_call_id] = content
        return ToolReturnPart(
            call.tool_name,
            result.return_value,
            call.tool_call_id,
            metadata=result.metadata,
            outcome=outcome,  # type: ignore[arg-type]
        )

    def _retry(
        self, call: ToolCallPart, content: Any, cause: str, max_retries: int | None, *, output: bool = False
    ) -> ToolReturnPart:
        """The retry part for a failed call; past the tool's budget (`output`: the output's), the
        run fails."""
        state = self.state
        limit = state.max_retries if max_retries is None else max_retries
        # Failed calls of one tool in one response share an attempt number, as in the reference:
        # the model made one attempt at using the tool, however many calls it put in it.
        count = self.step_retries.get(call.tool_name)
        if count is None:
            count = self.step_retries[call.tool_name] = state.ctx.retries.get(call.tool_name, 0) + 1
        state.ctx.retries[call.tool_name] = count
        if count > limit:
            check_incomplete_tool_call(state)
            if output:
                raise UnexpectedModelBehavior(f'Exceeded maximum output retries ({limit})')
            raise UnexpectedModelBehavior(f'Tool {call.tool_name!r} exceeded max retries count of {limit}')
        return ToolReturnPart(
            call.tool_name,
            content,
            call.tool_call_id,
            outcome='retried',
            retry=RetryInfo(cause, attempt=count, max_retries=limit),
        )
