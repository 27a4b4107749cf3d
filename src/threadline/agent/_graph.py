"""The run loop as explicit nodes: `UserPromptNode` -> `ModelRequestNode` <-> `CallToolsNode` -> `End`.

Each node's `run(state)` does one step and returns the next node. History rules enforced here:

- a non-empty `message_history` means no new system prompt is generated;
- every request the run creates carries the running agent's instructions, and only those are
  offered to the model (instructions stored on earlier requests are never re-sent);
- the caller's list is never mutated: the run works on its own list, and replaces (never edits)
  a history message it must change (the trailing request it resumes);
- ids: everything the run creates gets its `run_id` and `conversation_id` where unset.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from ..exceptions import ModelRetry, UnexpectedModelBehavior, UsageLimitExceeded, UserError
from ..messages import (
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    repair_messages,
    repair_report,
)
from ..messages._events import FunctionToolCallEvent, FunctionToolResultEvent
from ..models import render_history
from ._capability import ModelRequestContext
from ._output import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from ._state import RunState, now_utc
from ._tools import Tool, ToolArgsError

__all__ = ['AgentNode', 'CallToolsNode', 'End', 'FinalResult', 'ModelRequestNode', 'NodeResult', 'UserPromptNode']

T = TypeVar('T')


@dataclass
class FinalResult(Generic[T]):
    """The run's output, and the output tool call that carried it (if any)."""

    output: T
    tool_name: str | None = None
    tool_call_id: str | None = None


@dataclass
class End(Generic[T]):
    """The node that ends a run; `data` is its `FinalResult`."""

    data: T


def _unanswered_calls(history: list[Any], index: int) -> list[ToolCallPart]:
    """Calls in the response at `index` with no result in the requests after it."""
    answered = {
        part.tool_call_id
        for message in history[index + 1 :]
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }
    calls = [p for p in history[index].parts if isinstance(p, ToolCallPart)]
    return [c for c in calls if c.tool_call_id not in answered]


def _last_response_index(history: list[Any]) -> int | None:
    for index in range(len(history) - 1, -1, -1):
        if isinstance(history[index], ModelResponse):
            return index
    return None


def _clean_history_at_start(state: RunState, *, prompted: bool) -> None:
    """Repair the given history once, in place of the run's copy (so stored history may show merged
    messages). The last response's calls are left alone (the live frontier) unless the history is
    evidently interrupted: a trailing request marked interrupted, or a new prompt on top of a
    response marked interrupted."""
    history = state.history
    if not history:
        return
    last = history[-1]
    interrupted = (isinstance(last, ModelRequest) and last.state == 'interrupted') or (
        prompted
        and isinstance(last, ModelResponse)
        and last.state == 'interrupted'
        and any(isinstance(p, ToolCallPart) for p in last.parts)
    )
    repaired, events = repair_report(history, repair_last_response=interrupted)
    if events:
        history[:] = repaired
        state.repair_events.extend(events)
        state.ctx.repair_events.extend(events)


@dataclass
class UserPromptNode:
    """Turns the prompt and the given history into the first request (or resumes the history)."""

    user_prompt: Any = None

    async def run(self, state: RunState) -> ModelRequestNode | CallToolsNode | End[FinalResult[Any]]:
        _clean_history_at_start(state, prompted=self.user_prompt is not None)
        history = state.history
        state.new_message_index = len(history)
        if state.deferred_results is not None:
            return self._resume_deferred(state, state.deferred_results)
        last = history[-1] if history else None
        if self.user_prompt is None:
            if isinstance(last, ModelRequest):
                return await self._resume_trailing_request(state, last)
            if isinstance(last, ModelResponse):
                has_calls = any(isinstance(p, ToolCallPart) for p in last.parts)
                instructions = None if has_calls else await state.instructions()
                if instructions is None:
                    return CallToolsNode(last)
                # Nothing to run and nothing said, but the agent has instructions: ask the model
                # (a summarizer run over a history is exactly this).
                return ModelRequestNode(ModelRequest(parts=[], instructions=instructions))
        elif isinstance(last, ModelResponse) and _unanswered_calls(history, len(history) - 1):
            raise UserError(
                'Cannot provide a new user prompt when the message history contains unprocessed tool calls. '
                'Run without a prompt to execute them, or repair the history first '
                '(threadline.messages.repair_messages).'
            )
        instructions = await state.instructions()
        parts: list[Any] = [] if history else await state.system_prompt_parts()
        if self.user_prompt is not None:
            parts.append(UserPromptPart(self.user_prompt))
        elif not parts and instructions is None:
            raise UserError('No message history, user prompt, or instructions provided')
        return ModelRequestNode(ModelRequest(parts=parts, instructions=instructions))

    async def _resume_trailing_request(self, state: RunState, last: ModelRequest) -> ModelRequestNode:
        # The trailing request is prior context: replaced by a copy (the caller's object is left
        # alone) and kept out of new_messages().
        resumed = replace(
            last,
            timestamp=now_utc(),
            instructions=await state.instructions(),
            state='complete',
            run_id=last.run_id or state.ctx.run_id,
            conversation_id=last.conversation_id or state.ctx.conversation_id,
        )
        state.history[-1] = resumed
        state.resumed_request = resumed
        return ModelRequestNode(resumed, in_history=True)

    def _resume_deferred(self, state: RunState, results: DeferredToolResults) -> CallToolsNode:
        history = state.history
        index = _last_response_index(history)
        if index is None:
            raise UserError('deferred_tool_results were given but the message history has no model response')
        calls = [p for p in history[index].parts if isinstance(p, ToolCallPart)]
        if not calls:
            raise UserError('deferred_tool_results were given but the last model response has no tool calls')
        open_ids = {c.tool_call_id for c in _unanswered_calls(history, index)}
        for call_id in [*results.calls, *results.approvals]:
            if call_id not in {c.tool_call_id for c in calls}:
                raise UserError(f'deferred_tool_results has a result for unknown tool call {call_id!r}')
            if call_id not in open_ids:
                raise UserError(f'Tool call {call_id!r} was already executed and its result cannot be overridden.')
        response = history[index]
        assert isinstance(response, ModelResponse)
        return CallToolsNode(response, deferred=results)


@dataclass
class ModelRequestNode:
    """Sends the history (with this request at its end) to the model and records the response."""

    request: ModelRequest
    in_history: bool = False
    result: Any = field(default=None, repr=False, compare=False)
    _outcome: str = field(default='complete', repr=False, compare=False)
    _streamed: Any = field(default=None, repr=False, compare=False)

    async def run(self, state: RunState) -> CallToolsNode:
        request_context, prepared = await self._prepare(state)
        model = request_context.model
        try:
            response = await model.request(
                prepared, request_context.model_settings, request_context.model_request_parameters
            )
        except Exception as error:  # noqa: BLE001 - capabilities may recover; otherwise re-raised
            response = await state.capabilities.on_model_request_error(state.ctx, request_context, error)
        return await self._finish(state, request_context, response)

    @asynccontextmanager
    async def stream(self, state: RunState) -> AsyncIterator[Any]:
        """Stream this request's response (a `StreamedResponse`). When the block ends the response
        is recorded like a non-streamed one; `abandon()` or `interrupt()` from inside changes that."""
        request_context, prepared = await self._prepare(state)
        model = request_context.model
        self._outcome = 'complete'
        async with model.request_stream(
            prepared, request_context.model_settings, request_context.model_request_parameters
        ) as streamed:
            self._streamed = streamed
            yield streamed
        if self._outcome == 'abandoned':
            return
        response = streamed.get()
        if self._outcome == 'interrupted':
            response.state = 'interrupted'
        elif response.state == 'incomplete':
            response.state = 'complete'
        self.result = await self._finish(state, request_context, response)

    def abandon(self) -> None:
        """Inside `stream()`: leave the response out of the history (it was never consumed)."""
        self._outcome = 'abandoned'

    def interrupt(self) -> None:
        """Inside `stream()`: record what arrived so far as an interrupted response."""
        self._outcome = 'interrupted'

    async def _prepare(self, state: RunState) -> tuple[ModelRequestContext, list[Any]]:
        request = self.request
        if not self.in_history:
            if request.instructions is None:
                request.instructions = await state.instructions()
            request.timestamp = now_utc()
            state.append(request)
            self.in_history = True
        ctx = state.ctx
        state.limits.check_before_request(ctx.usage)
        ctx.run_step += 1
        state.drain_asap()
        params = await state.request_parameters()
        request_context = ModelRequestContext(
            model=state.model,
            messages=list(state.history),
            model_settings=state.settings,
            model_request_parameters=params,
        )
        before = _history_shape(state)
        request_context = await state.capabilities.before_model_request(state.ctx, request_context)
        if state.drain_asap():  # content a hook enqueued reaches this request too
            request_context.messages = list(state.history)
        _check_request_messages(request_context.messages)
        if _history_shape(state) != before:
            _stamp_last(state)
            state.recompute_new_message_index()
        # Processors may leave adjacent requests; the model always gets the repaired shape.
        prepared, skipped = render_history(repair_messages(request_context.messages), request_context.model.profile)
        if skipped:
            state.warn_skipped(skipped)
        return request_context, prepared

    async def _finish(
        self, state: RunState, request_context: ModelRequestContext, response: ModelResponse
    ) -> CallToolsNode:
        ctx = state.ctx
        model = request_context.model
        # Hooks see the response as it will be stored (ids, model); a replacement gets the same.
        _stamp_response(state, response, model)
        response = await state.capabilities.after_model_request(state.ctx, request_context, response)
        _stamp_response(state, response, model)
        state.history.append(response)
        for usage in (ctx.usage, state.run_usage):
            usage.requests += 1
            usage.incr(response.usage)
        if state.limits.has_token_limits():
            try:
                state.limits.check_tokens(ctx.usage)
            except UsageLimitExceeded:
                response.state = 'interrupted'
                raise
        return CallToolsNode(response)


def _stamp_response(state: RunState, response: ModelResponse, model: Any) -> None:
    if response.model_name is None:
        response.model_name = model.model_name
    if response.provider_name is None:
        response.provider_name = model.system
    state.stamp(response)


def _history_shape(state: RunState) -> tuple[int, int, int]:
    history = state.history
    index = state.new_message_index
    marker = id(history[index - 1]) if 0 < index <= len(history) else 0
    return len(history), id(history[-1]) if history else 0, marker


def _check_request_messages(messages: list[Any]) -> None:
    if not messages:
        raise UserError('Processed history cannot be empty.')
    if not isinstance(messages[-1], ModelRequest):
        raise UserError('Processed history must end with a `ModelRequest`.')


def _stamp_last(state: RunState) -> None:
    """After a processor rewrote the history, the message it left last gets the run's ids."""
    if state.history:
        last = state.history[-1]
        if last.run_id is None or last.conversation_id is None:
            stamped = replace(
                last,
                run_id=last.run_id or state.ctx.run_id,
                conversation_id=last.conversation_id or state.ctx.conversation_id,
            )
            state.history[-1] = stamped


@dataclass
class CallToolsNode:
    """Acts on a response: runs its tool calls, accepts its output, or asks the model to retry."""

    model_response: ModelResponse
    deferred: DeferredToolResults | None = None

    async def run(self, state: RunState) -> ModelRequestNode | End[FinalResult[Any]]:
        response = self.model_response
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        if calls and response is not state.history[-1]:
            index = next(i for i in range(len(state.history) - 1, -1, -1) if state.history[i] is response)
            calls = _unanswered_calls(state.history, index)
        if not calls:
            return await self._handle_text(state, response)
        return await _ToolStep(state, calls, self.deferred).run()

    async def _handle_text(self, state: RunState, response: ModelResponse) -> ModelRequestNode | End[FinalResult[Any]]:
        texts = [p.content for p in response.parts if isinstance(p, TextPart)]
        if texts and state.output.allow_text:
            text = ''.join(texts)
            try:
                output = await _validate_output(state, text)
            except ModelRetry as retry:
                return await _retry_feedback(state, retry.message, cause='model_retry')
            return End(FinalResult(output))
        message = 'Please return text.' if state.output.allow_text else 'Please include your response in a tool call.'
        return await _retry_feedback(state, message, cause='no_output')


async def _queue_request(state: RunState, parts: list[Any]) -> ModelRequestNode:
    """Add the next request (tool results, feedback) to the history now, so the boundary after the
    node that produced it is settled: a store sees the results before the next model call."""
    request = ModelRequest(parts=parts, timestamp=now_utc(), instructions=await state.instructions())
    state.append(request)
    return ModelRequestNode(request, in_history=True)


async def _retry_feedback(state: RunState, message: str, *, cause: str) -> ModelRequestNode:
    state.output_retries += 1
    if state.output_retries > state.max_retries:
        raise UnexpectedModelBehavior(f'Exceeded maximum retries ({state.max_retries}) for output validation')
    part = RetryFeedbackPart(
        message, retry=RetryInfo(cause, attempt=state.output_retries, max_retries=state.max_retries)
    )
    return await _queue_request(state, [part])


async def _validate_output(state: RunState, output: Any) -> Any:
    for validator in state.output_validators:
        takes_ctx = len(inspect.signature(validator).parameters) >= 2
        result = validator(state.ctx, output) if takes_ctx else validator(output)
        if inspect.isawaitable(result):
            result = await result
        output = result
    return output


class _ToolStep:
    """One response's tool calls: validated, executed (concurrently), answered in call order."""

    def __init__(self, state: RunState, calls: list[ToolCallPart], deferred: DeferredToolResults | None) -> None:
        self.state = state
        self.calls = calls
        self.deferred = deferred
        self.final: FinalResult[Any] | None = None
        self.pending_approvals: list[ToolCallPart] = []
        self.pending_calls: list[ToolCallPart] = []

    async def run(self) -> ModelRequestNode | End[FinalResult[Any]]:
        state = self.state
        output_names = {t.name for t in state.output.output_tools}
        runnable = [c for c in self.calls if c.tool_name in state.tools]
        try:
            state.limits.check_tool_calls(state.ctx.usage, len(runnable))
        except UsageLimitExceeded:
            state.append(ModelRequest(parts=[], state='interrupted', timestamp=now_utc()))
            raise
        slots: list[Any] = [None] * len(self.calls)
        seen: set[str] = set()
        tasks: list[tuple[int, Any]] = []
        for index, call in enumerate(self.calls):
            if call.tool_call_id in seen:
                slots[index] = self._duplicate(call)
            elif call.tool_name in output_names:
                slots[index] = await self._output_call(call)
            elif call.tool_name in state.tools:
                tasks.append((index, self._function_call(call, state.tools[call.tool_name])))
            else:
                slots[index] = self._retry(call, self._unknown_tool_message(call), 'model_retry', None)
            seen.add(call.tool_call_id)
        if self.final is not None:
            for index, _ in tasks:
                slots[index] = ToolReturnPart(
                    self.calls[index].tool_name,
                    'Tool not executed - a final result was already processed.',
                    self.calls[index].tool_call_id,
                )
        else:
            for index, _ in tasks:
                state.emit(FunctionToolCallEvent(self.calls[index]))
            results = await asyncio.gather(*(task for _, task in tasks))
            for (index, _), result in zip(tasks, results, strict=True):
                slots[index] = result
                if result is not None:
                    state.emit(FunctionToolResultEvent(result))
        parts = [part for part in slots if part is not None]
        return await self._next(parts)

    async def _next(self, parts: list[Any]) -> ModelRequestNode | End[FinalResult[Any]]:
        state = self.state
        if self.final is not None:
            state.append(ModelRequest(parts=parts, timestamp=now_utc()))
            return End(self.final)
        if self.pending_approvals or self.pending_calls:
            if not state.output.allow_deferred:
                raise UserError(
                    'A tool call needs approval or external execution, but DeferredToolRequests is not among the '
                    'output types: pass output_type=[str, DeferredToolRequests] (or a union with it).'
                )
            if parts:
                state.append(ModelRequest(parts=parts, timestamp=now_utc()))
            requests = DeferredToolRequests(calls=self.pending_calls, approvals=self.pending_approvals)
            return End(FinalResult(requests))
        return await _queue_request(state, parts)

    def _unknown_tool_message(self, call: ToolCallPart) -> str:
        names = sorted([*self.state.tools, *(t.name for t in self.state.output.output_tools)])
        available = ', '.join(repr(n) for n in names) if names else 'none'
        return f'Unknown tool name: {call.tool_name!r}. Available tools: {available}'

    def _duplicate(self, call: ToolCallPart) -> RetryFeedbackPart:
        message = (
            f'Tool call id {call.tool_call_id!r} appears more than once in your response; the repeated call was '
            'not run. Give every tool call its own id.'
        )
        self.state.output_retries += 1
        if self.state.output_retries > self.state.max_retries:
            raise UnexpectedModelBehavior(f'Exceeded maximum retries ({self.state.max_retries}): {message}')
        return RetryFeedbackPart(message, retry=RetryInfo('model_retry', attempt=self.state.output_retries))

    def _retry(self, call: ToolCallPart, content: Any, cause: str, max_retries: int | None) -> ToolReturnPart:
        state = self.state
        limit = state.max_retries if max_retries is None else max_retries
        count = state.ctx.retries.get(call.tool_name, 0) + 1
        state.ctx.retries[call.tool_name] = count
        if count > limit:
            raise UnexpectedModelBehavior(f'Tool {call.tool_name!r} exceeded max retries count of {limit}')
        return ToolReturnPart(
            call.tool_name,
            content,
            call.tool_call_id,
            outcome='retried',
            retry=RetryInfo(cause, attempt=count, max_retries=limit),
        )

    async def _output_call(self, call: ToolCallPart) -> ToolReturnPart:
        if self.final is not None:
            return ToolReturnPart(
                call.tool_name, 'Output tool not used - a final result was already processed.', call.tool_call_id
            )
        try:
            value = await _validate_output(self.state, self.state.output.validate(call.args))
        except ToolArgsError as exc:
            return self._retry(call, exc.errors, 'validation_error', None)
        except ModelRetry as retry:
            return self._retry(call, retry.message, 'model_retry', None)
        self.final = FinalResult(value, call.tool_name, call.tool_call_id)
        return ToolReturnPart(call.tool_name, 'Final result processed.', call.tool_call_id)

    async def _function_call(self, call: ToolCallPart, tool: Tool[Any]) -> ToolReturnPart | None:
        deferred = self.deferred
        approved = False
        override: dict[str, Any] | None = None
        if deferred is not None and call.tool_call_id in deferred.calls:
            return _external_result(call, deferred.calls[call.tool_call_id])
        if deferred is not None and call.tool_call_id in deferred.approvals:
            decision = deferred.approvals[call.tool_call_id]
            if decision is False or isinstance(decision, ToolDenied):
                message = decision.message if isinstance(decision, ToolDenied) else ToolDenied().message
                return ToolReturnPart(call.tool_name, message, call.tool_call_id, outcome='denied')
            approved = True
            override = decision.override_args if isinstance(decision, ToolApproved) else None
        if tool.requires_approval and not approved:
            self.pending_approvals.append(call)
            return None
        return await self._execute(call, tool, approved, override)

    async def _execute(
        self, call: ToolCallPart, tool: Tool[Any], approved: bool, override: dict[str, Any] | None
    ) -> ToolReturnPart:
        state = self.state
        limit = state.max_retries if tool.max_retries is None else tool.max_retries
        tool_ctx = state.ctx.for_tool(
            tool_name=call.tool_name,
            tool_call_id=call.tool_call_id,
            retry=state.ctx.retries.get(call.tool_name, 0),
            max_retries=limit,
            approved=approved,
        )
        try:
            args = tool.validate_args(override if override is not None else call.args)
        except ToolArgsError as exc:
            return self._retry(call, exc.errors, 'validation_error', limit)
        tool_def = tool.tool_def
        for usage in (state.ctx.usage, state.run_usage):
            usage.tool_calls += 1
        outcome = 'success'
        try:
            args = await state.capabilities.before_tool_execute(tool_ctx, call, tool_def, args)
            result = await tool.call(tool_ctx, args)
            result = await state.capabilities.after_tool_execute(tool_ctx, call, tool_def, args, result)
        except Exception as error:  # noqa: BLE001 - capabilities may recover; otherwise re-raised
            try:
                result = await state.capabilities.on_tool_execute_error(tool_ctx, call, tool_def, args, error)
            except ModelRetry as retry:
                return self._retry(call, retry.message, 'model_retry', limit)
            outcome = 'failed'
        if isinstance(result, ToolReturnPart):
            return result
        return ToolReturnPart(call.tool_name, result, call.tool_call_id, outcome=outcome)  # type: ignore[arg-type]


def _external_result(call: ToolCallPart, value: Any) -> ToolReturnPart:
    if isinstance(value, ToolReturnPart):
        return value
    if isinstance(value, ModelRetry):
        return ToolReturnPart(
            call.tool_name, value.message, call.tool_call_id, outcome='retried', retry=RetryInfo('model_retry')
        )
    return ToolReturnPart(call.tool_name, value, call.tool_call_id)


AgentNode = UserPromptNode | ModelRequestNode | CallToolsNode
NodeResult = ModelRequestNode | CallToolsNode | End[FinalResult[Any]]
