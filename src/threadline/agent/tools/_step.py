"""Running one response's tool calls: approvals and deferred results, concurrency, retries,
output tools, and the capability hooks around each tool body."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from threadline.agent._state import RunState, now_utc
from threadline.agent.output._deferred_types import DeferredToolResults
from threadline.agent.output._end import End, FinalResult
from threadline.agent.output._validators import output_call_context, validate_output
from threadline.agent.tools._calls import Checked, FunctionCalls
from threadline.agent.tools._deferred import Waiting
from threadline.agent.tools._lifecycle import ToolLifecycle
from threadline.agent.tools._reveal import delta_part, revealed, visible
from threadline.agent.tools._tool import Tool, ToolArgsError
from threadline.exceptions import (
    ModelRetry,
    UnexpectedModelBehavior,
    UserError,
)
from threadline.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelRequest,
    ModelRequestPart,
    ToolCallPart,
    ToolReturnPart,
    UserContent,
)

if TYPE_CHECKING:
    pass

__all__ = ['ToolStep']

T = TypeVar('T')
Slots = list['ModelRequestPart | None']
"""Each call's result part, in the order of the calls (None until it has one, or for none)."""
Outcome: TypeAlias = list[ModelRequestPart] | End[FinalResult[Any]]
"""What a step ends with: the parts of the next request, or the run's end."""


class ToolStep(FunctionCalls):
    """One response's tool calls: validated, executed (concurrently), answered in call order.

    `run()` returns the parts of the next request (tool results, retries), or `End` when an
    output tool produced the final result or calls wait on approval or external execution.
    """

    def __init__(
        self,
        state: RunState,
        calls: list[ToolCallPart],
        deferred: DeferredToolResults | None,
        *,
        text: str = '',
        streamed_text: bool = False,
        streamed_call: str | None = None,
    ) -> None:
        self.state = state
        self.text = text
        """The response's text beside its calls: under `'early'`, valid structured text is the output."""
        self.streamed_text = streamed_text
        self.streamed_call = streamed_call
        """The id of the output call `run_stream` handed the response over on (it decides)."""
        """The response was streamed as the final one on its text (`run_stream`): the text is the
        output whatever the strategy, and only `'early'` leaves the calls unexecuted."""
        self.calls = calls
        self.deferred = deferred
        self.final: FinalResult[Any] | None = None
        self.waiting = Waiting()
        self.late: list[ModelRequestPart] = []  # results of calls a deferred-calls hook resolved
        self.finished: list[ModelRequestPart] = []  # function results, as they finish
        self.reveals: dict[str, list[str]] = {}  # tool call id -> names its ToolReturn revealed
        self.trailing: list[ModelRequestPart] = []  # ToolReturn content, after every result
        self.contents: dict[str, str | list[UserContent]] = {}  # that content by call id, for the result events
        self.callable = _callable_tools(state)
        self.lifecycle = ToolLifecycle(state.capabilities)
        self.step_retries: dict[str, int] = {}  # tool name -> the attempt its failures in this step count as

    async def _handle_deferred(self) -> None:
        """Let `handle_deferred_tool_calls` hooks answer the calls waiting on approval or an
        outside result, so the run goes on: the answered calls run after the step's others
        (approvals first); calls left unanswered, or that wait again, still end the run."""
        state = self.state
        requests = self.waiting.requests()
        results = await state.capabilities.handle_deferred_tool_calls(state.ctx, requests)
        if results is None:
            return
        self.deferred = requests.answered_by(results)
        resolved = self.waiting.resolved_in_order(self.deferred)
        self.waiting = self.waiting.without(resolved)
        for call in resolved:
            part = await self._function_call(call, self.callable[call.tool_name])
            if part is not None:
                self.late.append(part)
                state.emit(FunctionToolResultEvent(part, content=self.contents.get(part.tool_call_id)))

    async def run(self) -> Outcome:
        """The step; when it fails or is cancelled, the history ends on a request with
        `state='interrupted'` holding the function results finished so far (in the order they
        finished), as the reference records it: the marker that the other calls will never be
        answered, for `capture_run_messages` and for the repair a resumed run makes."""
        length = len(self.state.history)
        try:
            return await self._run()
        except BaseException:
            if len(self.state.history) == length:
                self.state.append(ModelRequest(parts=self.finished, state='interrupted', timestamp=now_utc()))
            raise

    async def _run(self) -> Outcome:
        state = self.state
        runnable = [c for c in self.calls if c.tool_name in self.callable]
        state.limits.check_tool_calls(state.ctx.usage, len(runnable))
        slots: Slots = [None] * len(self.calls)
        outputs, functions, unknown = self._classify(slots)
        if self.streamed_call is not None:
            await self._streamed_output(slots, outputs)
        if state.end_strategy == 'early':
            slots = await self._early(slots, outputs, functions, unknown)
        else:
            self._refuse_repeated_ids(functions, unknown)
            self._unknown(slots, unknown)
            if self.streamed_text and not outputs:
                await self._text_is_final(functions)
            await self._run_functions(functions, slots)
            for index in outputs:
                if slots[index] is None:
                    slots[index] = await self._output_call(self.calls[index])
            retried = any(_retried(slots[i]) for i in functions)
            if self.final is not None and retried and self.streamed_call is None and not self.streamed_text:
                self._defer_final(slots)
        if self.waiting and state.capabilities.has('handle_deferred_tool_calls'):
            await self._handle_deferred()
        return await self._next(self._assemble(slots))

    def _classify(self, slots: Slots) -> tuple[list[int], list[int], list[int]]:
        """The positions of the output calls, the function calls and the unknown calls."""
        output_names = {t.name for t in self.state.step_output_tools}
        outputs: list[int] = []
        functions: list[int] = []
        unknown: list[int] = []
        for index, call in enumerate(self.calls):
            if call.tool_name in output_names:
                outputs.append(index)
            elif call.tool_name in self.callable:
                functions.append(index)
            else:
                unknown.append(index)
        return outputs, functions, unknown

    def _refuse_repeated_ids(self, functions: list[int], unknown: list[int]) -> None:
        """Results are bound to function and unknown calls by id, so a repeated id there would be
        ambiguous: the step fails before any of them runs (`UnexpectedModelBehavior`, as in the
        reference). Output calls are not bound by id and are answered as usual."""
        seen: set[str] = set()
        repeated: list[str] = []
        for index in sorted([*functions, *unknown]):
            call_id = self.calls[index].tool_call_id
            if call_id in seen and call_id not in repeated:
                repeated.append(call_id)
            seen.add(call_id)
        if repeated:
            raise UnexpectedModelBehavior(
                f'Function tool calls must have unique `tool_call_id` values; duplicate `tool_call_id`s: {repeated}'
            )

    def _unknown(self, slots: Slots, unknown: list[int]) -> None:
        for index in unknown:
            slots[index] = self._retry(
                self.calls[index], self._unknown_tool_message(self.calls[index]), 'model_retry', None
            )

    async def _early(self, slots: Slots, outputs: list[int], functions: list[int], unknown: list[int]) -> Slots:
        """`'early'`: the first valid output (an output call in response order, or structured
        text) is final, and every other call is answered "not executed", in response order after
        the output calls' results."""
        text_final = not outputs and await self._text_is_final(functions)
        if not text_final:
            for index in outputs:
                if slots[index] is None:
                    slots[index] = await self._output_call(self.calls[index])
        if self.final is None:
            self._refuse_repeated_ids(functions, unknown)
            self._unknown(slots, unknown)
            await self._run_functions(functions, slots)
        else:
            for index in [*functions, *unknown]:
                slots[index] = _not_executed(self.calls[index])
        # As the reference records it: the output tools' results first.
        order = [*outputs, *(i for i in range(len(slots)) if i not in set(outputs))]
        return [slots[i] for i in order]

    async def _streamed_output(self, slots: Slots, outputs: list[int]) -> None:
        """`run_stream` handed the response over on an output call: that call decides, first,
        before any tool runs. It is final even if a sibling tool asks for a retry, and a stream
        cannot be retried, so an invalid one ends the run (as in the reference)."""
        index = next((i for i in outputs if self.calls[i].tool_call_id == self.streamed_call), None)
        if index is None:
            return
        slots[index] = await self._output_call(self.calls[index])
        if self.final is None:
            raise UnexpectedModelBehavior(
                'Output validation failed during streaming, and retries are not supported in `run_stream()`'
            )

    async def _text_is_final(self, functions: list[int]) -> bool:
        """Under `'early'`: whether the response's text, validated against the output's schema
        (native, prompted, auto; plain text only when it was streamed as the final response, as
        it may be a preamble otherwise), is the final result.
        Only beside plain function tools: an approval or an external call still surfaces. Text
        that fails validation is not retried: running the tools is the correction."""
        state = self.state
        if not (self.text and (state.output.structured_text or (self.streamed_text and state.output.allow_text))):
            return False
        if any(self.callable[self.calls[i].tool_name].tool_def.kind != 'function' for i in functions):
            return False
        try:
            value = await state.output.from_text(state.ctx, state.capabilities, self.text)
            value = await validate_output(state, value)
        except (ToolArgsError, ModelRetry):
            return False
        self.final = FinalResult(value)
        return True

    async def _run_functions(self, functions: list[int], slots: Slots) -> None:
        """Check the function calls at `functions` in order, then run them concurrently, their
        results into `slots`; calls that wait are checked after the others ran (see `_calls`)."""
        tool_of = self.callable
        later = [i for i in functions if self.waits(self.calls[i], tool_of[self.calls[i].tool_name])]
        for group in ([i for i in functions if i not in later], later):
            checked = [await self._checked(self.calls[i]) for i in group]
            sequential = [c.tool.tool_def.sequential for c in checked]
            for batch in _batches(list(range(len(group))), sequential.__getitem__):
                results = await _gather_cancelling([self._finished_call(checked[k]) for k in batch])
                for k, result in zip(batch, results, strict=True):
                    slots[group[k]] = result
                    if result is not None:
                        content = self.contents.get(result.tool_call_id)
                        self.state.emit(FunctionToolResultEvent(result, content=content))

    async def _checked(self, call: ToolCallPart) -> Checked:
        try:
            checked = await self.check(call, self.callable[call.tool_name])
        except UnexpectedModelBehavior:
            self.state.emit(FunctionToolCallEvent(call, args_valid=False))
            raise
        self.state.emit(FunctionToolCallEvent(call, args_valid=checked.args_valid))
        return checked

    async def _finished_call(self, checked: Checked) -> ToolReturnPart | None:
        result = await self.run_checked(checked)
        if result is not None:
            self.finished.append(result)  # what an interrupted step still records
        return result

    def _defer_final(self, slots: Slots) -> None:
        """A function tool asked for a retry in the step that produced the output: the output is
        not final, so the model addresses the retry first (`graceful` and `exhaustive`)."""
        assert self.final is not None
        for index, part in enumerate(slots):
            if isinstance(part, ToolReturnPart) and part.tool_call_id == self.final.tool_call_id:
                slots[index] = ToolReturnPart(
                    part.tool_name,
                    'Output not used as the final result - addressing tool retries from this round first.',
                    part.tool_call_id,
                )
        self.final = None

    def _assemble(self, slots: Slots) -> list[ModelRequestPart]:
        """The step's parts in call order, each reveal right after its result, then any content
        tools sent beside their results (see `ToolReturn`)."""
        shown = revealed(self.state.history) if self.reveals else set()
        parts: list[ModelRequestPart] = []
        kinds = {c.tool_call_id: c.tool_kind for c in self.calls if c.tool_kind} if self.state.typed_tools else {}
        for part in [*slots, *self.late]:
            if part is None:
                continue
            if kinds and isinstance(part, ToolReturnPart) and part.tool_kind is None:
                part.tool_kind = kinds.get(part.tool_call_id)
            parts.append(part)
            names = self.reveals.get(part.tool_call_id) if isinstance(part, ToolReturnPart) else None
            delta = delta_part(names, shown, part.tool_call_id) if names and isinstance(part, ToolReturnPart) else None
            if delta is not None:
                parts.append(delta)
        return [*parts, *self.trailing]

    async def _next(self, parts: list[ModelRequestPart]) -> Outcome:
        state = self.state
        if self.final is not None:
            state.append(ModelRequest(parts=parts, timestamp=now_utc()))
            return End(self.final)
        if self.waiting:
            if not state.output.allow_deferred:
                raise UserError(
                    'A tool call needs approval or external execution, but DeferredToolRequests is not among the '
                    'output types: pass output_type=[str, DeferredToolRequests] (or a union with it).'
                )
            if parts:
                state.append(ModelRequest(parts=parts, timestamp=now_utc()))
            return End(FinalResult(self.waiting.requests()))
        return parts

    def _unknown_tool_message(self, call: ToolCallPart) -> str:
        names = sorted([*self.callable, *(t.name for t in self.state.step_output_tools)])
        if names:
            said = 'Available tools: ' + ', '.join(repr(n) for n in names)
        elif self.state.tools:  # all still hidden behind tool search
            said = 'No tools are available yet: search for the tools you need.'
        else:
            said = 'No tools available.'
        return f'Unknown tool name: {call.tool_name!r}. {said}'

    async def _output_call(self, call: ToolCallPart) -> ToolReturnPart:
        exhaustive = self.state.end_strategy == 'exhaustive'
        if self.final is not None and call.tool_call_id == self.final.tool_call_id:
            # The reference binds output results by id: a repeat of the final call's id is answered as it.
            return ToolReturnPart(call.tool_name, 'Final result processed.', call.tool_call_id)
        if self.final is not None and not exhaustive:
            return ToolReturnPart(
                call.tool_name, 'Output tool not used - a final result was already processed.', call.tool_call_id
            )
        limit = self.state.output.max_retries(call.tool_name)
        limit = self.state.max_output_retries if limit is None else limit  # the output budget by default
        ctx = output_call_context(self.state, call)
        try:
            value = await self.state.output.from_call(ctx, self.state.capabilities, call)
            value = await validate_output(self.state, value, ctx)
        except ToolArgsError as exc:
            return self._retry(call, exc.errors, 'validation_error', limit, output=True)
        except ModelRetry as retry:
            return self._retry(call, retry.message, 'model_retry', limit, output=True)
        if self.final is not None:  # exhaustive: validated, but the first output stays final
            message = 'Output tool processed, but its value will not be the final result of the agent run.'
            return ToolReturnPart(call.tool_name, message, call.tool_call_id)
        self.final = FinalResult(value, call.tool_name, call.tool_call_id)
        return ToolReturnPart(call.tool_name, 'Final result processed.', call.tool_call_id)


def _callable_tools(state: RunState) -> dict[str, Tool[Any]]:
    """The tools the model may call now: deferred ones only once revealed (see `_reveal`)."""
    if not any(t.tool_def.defer_loading for t in state.tools.values()):
        return state.tools
    shown = {d.name for d in visible((t.tool_def for t in state.tools.values()), state.history)}
    return {name: t for name, t in state.tools.items() if name in shown}


def _batches(indexes: list[int], sequential: Callable[[int], bool]) -> list[list[int]]:
    """The calls in groups that run concurrently: a sequential tool's call is a group of its own,
    so calls before it finish first and calls after it wait."""
    groups: list[list[int]] = []
    current: list[int] = []
    for index in indexes:
        if sequential(index):
            groups.extend(g for g in (current, [index]) if g)
            current = []
        else:
            current.append(index)
    if current:
        groups.append(current)
    return groups


def _retried(part: ModelRequestPart | None) -> bool:
    return isinstance(part, ToolReturnPart) and part.outcome == 'retried'


async def _gather_cancelling(calls: Sequence[Awaitable[T]]) -> list[T]:
    """Run the calls concurrently; when one raises, cancel its siblings (and wait for them to
    stop) before the error goes on, so no tool keeps running after its run has failed."""
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _not_executed(call: ToolCallPart) -> ToolReturnPart:
    return ToolReturnPart(
        call.tool_name, 'Tool not executed - a final result was already processed.', call.tool_call_id
    )
