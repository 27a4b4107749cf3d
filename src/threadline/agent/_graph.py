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

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from threadline.agent._capability import ModelRequestContext
from threadline.agent._cut_short import check_incomplete_tool_call, refuse_cut_short, without_output
from threadline.agent._history_start import clean_history_at_start, refresh_dynamic_system_prompts
from threadline.agent._model_choice import choose_for_request
from threadline.agent._node_stream import stream_request_node, stream_tools_node
from threadline.agent._request_stream import serving, streamed_request
from threadline.agent._stamp import stamp_response
from threadline.agent._state import RunState, now_utc
from threadline.agent.output._deferred_types import DeferredToolResults
from threadline.agent.output._end import End, FinalResult
from threadline.agent.output._validators import validate_output
from threadline.agent.tools._return_schemas import with_return_schemas
from threadline.agent.tools._reveal import visible
from threadline.agent.tools._step import ToolStep
from threadline.agent.tools._tool import ToolArgsError
from threadline.exceptions import ModelRetry, SkipModelRequest, UnexpectedModelBehavior, UsageLimitExceeded, UserError
from threadline.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.models import FallbackModel, Model, StreamedResponse
from threadline.models.budget import request_timeout, within_deadline

__all__ = ['AgentNode', 'CallToolsNode', 'End', 'FinalResult', 'ModelRequestNode', 'NodeResult', 'UserPromptNode']


def _unanswered_calls(history: list[ModelMessage], index: int) -> list[ToolCallPart]:
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


def _last_response_index(history: list[ModelMessage]) -> int | None:
    for index in range(len(history) - 1, -1, -1):
        if isinstance(history[index], ModelResponse):
            return index
    return None


@dataclass
class UserPromptNode:
    """Turns the prompt and the given history into the first request (or resumes the history)."""

    user_prompt: Any = None  # what the caller passed (a str, or any sequence of user content), kept as given

    async def run(self, state: RunState) -> ModelRequestNode | CallToolsNode | End[FinalResult[Any]]:
        clean_history_at_start(state)
        await refresh_dynamic_system_prompts(state)
        history = state.history
        state.new_message_index = len(history)
        if state.deferred_results is not None:
            return self._resume_deferred(state, state.deferred_results, self.user_prompt)
        last = history[-1] if history else None
        if self.user_prompt is None:
            if isinstance(last, ModelRequest):
                return await self._resume_trailing_request(state, last)
            if isinstance(last, ModelResponse):
                has_calls = any(isinstance(p, ToolCallPart) for p in last.parts)
                instructions = None if has_calls else await state.instructions()
                if instructions is None:
                    if has_calls:
                        await state.resolve_tools(ahead=True)  # as for the request that follows
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
        if state.toolset is not None:  # toolsets built per step give instructions: resolve them first
            await state.resolve_tools(ahead=True)
        instructions = await state.instructions()
        parts: list[ModelRequestPart] = [] if history else list(await state.system_prompt_parts())
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

    def _resume_deferred(self, state: RunState, results: DeferredToolResults, prompt: Any) -> CallToolsNode:
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
        return CallToolsNode(response, deferred=results, user_prompt=prompt)


@dataclass
class ModelRequestNode:
    """Sends the history (with this request at its end) to the model and records the response."""

    request: ModelRequest
    in_history: bool = False
    result: Any = field(default=None, repr=False, compare=False)
    _outcome: str = field(default='complete', repr=False, compare=False)
    _streamed: StreamedResponse | None = field(default=None, repr=False, compare=False)

    async def run(self, state: RunState) -> CallToolsNode | ModelRequestNode:
        """The request sent and its response recorded; `ModelRetry` from a hook after the model
        answered, or from a `wrap_model_request` hook before it did, asks the model again."""
        chain = state.capabilities
        if not chain.has('wrap_model_request'):
            opened = await self._open(state)
            try:
                request_context, prepared = await self._before(state, opened)
            except SkipModelRequest as skip:  # a hook answered in the model's place
                return self._record(state, opened.model, skip.response)
            response = await self._call(state, request_context, prepared)
            try:
                return await self._finish(state, request_context, response)
            except ModelRetry as retry:  # the response stays; the model is asked again
                self._record(state, request_context.model, response)
                return await retry_after_hook(state, retry)
        opened = await self._open(state)
        sent: list[ModelRequestContext] = [opened]
        answered: list[ModelResponse] = []

        async def lifecycle(request_context: ModelRequestContext) -> ModelResponse:
            request_context, prepared = await self._before(state, request_context)
            sent.append(request_context)
            response = await self._call(state, request_context, prepared)
            answered.append(response)
            return await self._after(state, request_context, response)

        try:
            response = await chain.wrap_model_request(state.ctx, opened, lifecycle)
        except SkipModelRequest as skip:  # a hook answered in the model's place
            response = skip.response
        except ModelRetry as retry:
            if answered:
                self._record(state, sent[-1].model, answered[-1])
            return await retry_after_hook(state, retry)
        # A wrap may answer without calling its handler: the response is recorded all the same.
        return self._record(state, sent[-1].model, response)

    async def _call(
        self, state: RunState, request_context: ModelRequestContext, prepared: list[ModelMessage]
    ) -> ModelResponse:
        # A run with an event_stream_handler under a capability that streams inside the request.
        model, streamed = request_context.model, state.stream_in_request
        settings = request_context.model_settings
        # A FallbackModel gives each of its models a deadline of its own.
        timeout = None if isinstance(model, FallbackModel) else request_timeout(settings)
        try:
            async with serving(state, model) as model:
                send = model.request if streamed is None else partial(streamed, model)
                sent = send(prepared, settings, request_context.model_request_parameters)
                return await within_deadline(model.model_name, timeout, sent)
        except Exception as error:  # noqa: BLE001 - capabilities may recover; otherwise re-raised
            return await state.capabilities.on_model_request_error(state.ctx, request_context, error)

    def stream(self, ctx: Any) -> AbstractAsyncContextManager[Any]:
        """Stream this request's response: with `agent_run.ctx`, a `RequestStream` of the run's
        events (see `_node_stream`); with the run's state (the run's own streams), the model's
        `StreamedResponse`. When the block ends the response is recorded like a non-streamed one;
        `abandon()` or `interrupt()` from inside changes that. The run's `wrap_model_request`
        hooks enclose it (see `_request_stream`)."""
        if isinstance(ctx, RunState):
            return streamed_request(self, ctx, retry_after_hook)
        return stream_request_node(self, ctx)

    def abandon(self) -> None:
        """Inside `stream()`: leave the response out of the history (it was never consumed)."""
        self._outcome = 'abandoned'

    def interrupt(self, *, failed: bool = False) -> None:
        """Inside `stream()`: record what arrived so far as an interrupted response; `failed`:
        the reading stopped on an error, so no `after_model_request` hook hears of it."""
        self._outcome = 'failed' if failed else 'interrupted'

    async def _open(self, state: RunState) -> ModelRequestContext:
        """The request enters the history and its context is built (before any hook sees it)."""
        request, fresh = self.request, not self.in_history
        if fresh:
            request.timestamp = now_utc()
            state.append(request)
            self.in_history = True
        await choose_for_request(state)  # before the instructions, which may read ctx.model
        if fresh and request.instructions is None:
            request.instructions = await state.instructions()
        ctx = state.ctx
        state.limits.check_before_request(ctx.usage)
        state.limits.check_cost_before_request(ctx.usage, state.model, state.history)
        ctx.run_step += 1
        state.drain_asap()
        await state.resolve_tools()
        params = await state.request_parameters()
        settings = state.step_settings()
        state.last_max_tokens = settings.get('max_tokens') if settings else None
        return ModelRequestContext(
            model=state.model,
            # A copy for the hooks that may change it; with none, nothing but the run reads it.
            messages=list(state.history) if _hooks_see_requests(state) else state.history,
            model_settings=settings,
            model_request_parameters=params,
        )

    async def _before(
        self, state: RunState, request_context: ModelRequestContext
    ) -> tuple[ModelRequestContext, list[ModelMessage]]:
        """The `before_model_request` hooks, then what the model is sent (tools it may see, the
        repaired and rendered history)."""
        before = _history_shape(state)
        request_context = await state.capabilities.before_model_request(state.ctx, request_context)
        if state.drain_asap():  # content a hook enqueued reaches this request too
            request_context.messages = list(state.history)
        # Plain output types go as JSON text where the model asks for it (Claude while it thinks).
        params = request_context.model_request_parameters
        if state.output.auto and params.output_tools:
            mode = request_context.model.structured_output_mode(request_context.model_settings, params)
            params = request_context.model_request_parameters = state.output.for_mode(params, mode)
        # Deferred tools follow the history actually sent: a processor that dropped a reveal hides them.
        if params.output_mode == 'native' and not request_context.model.profile.supports_json_schema_output:
            raise UserError(
                f'Native structured output is not supported by {request_context.model.model_name!r}: use '
                'ToolOutput or PromptedOutput, or set ModelProfile(supports_json_schema_output=True) if it has it'
            )
        params.function_tools = visible(params.function_tools, request_context.messages)
        if any(t.include_return_schema is not None for t in params.function_tools):
            params.function_tools = with_return_schemas(params.function_tools, request_context.model.profile)
        state.refresh_loaded(request_context.messages)
        _check_request_messages(request_context.messages)
        if _history_shape(state) != before:
            _stamp_last(state, request_context.messages)
            state.recompute_new_message_index()
        # Processors may leave adjacent requests; the model always gets the repaired shape.
        prepared, skipped = state.prepared.prepare(request_context.messages, request_context.model.profile)
        if skipped:
            state.warn_skipped(skipped)
        return request_context, prepared

    async def _finish(
        self, state: RunState, request_context: ModelRequestContext, response: ModelResponse
    ) -> CallToolsNode:
        response = await self._after(state, request_context, response)
        return self._record(state, request_context.model, response)

    async def _after(
        self, state: RunState, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        # Hooks see the response as it will be stored (ids, model); a replacement gets the same.
        stamp_response(state, response, request_context.model)
        return await state.capabilities.after_model_request(state.ctx, request_context, response)

    def _record(self, state: RunState, model: Model, response: ModelResponse) -> CallToolsNode:
        """The response enters the history and the usage (a token limit crossed marks it interrupted)."""
        ctx = state.ctx
        stamp_response(state, response, model)
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


def _hooks_see_requests(state: RunState) -> bool:
    chain = state.capabilities
    return any(chain.has(hook) for hook in _REQUEST_HOOKS)


_REQUEST_HOOKS = ('before_model_request', 'wrap_model_request', 'after_model_request', 'on_model_request_error')


def _history_shape(state: RunState) -> tuple[int, int, int]:
    history = state.history
    index = state.new_message_index
    marker = id(history[index - 1]) if 0 < index <= len(history) else 0
    return len(history), id(history[-1]) if history else 0, marker


def _check_request_messages(messages: list[ModelMessage]) -> None:
    if not messages:
        raise UserError('Processed history cannot be empty.')
    if not isinstance(messages[-1], ModelRequest):
        raise UserError('Processed history must end with a `ModelRequest`.')


def _stamp_last(state: RunState, sent: list[ModelMessage]) -> None:
    """After a processor rewrote the history, the message it left last gets the run's ids, and a
    request it built gets a timestamp (as one the run builds itself), in the history and in what
    is `sent`."""
    if state.history:
        last = state.history[-1]
        undated = isinstance(last, ModelRequest) and last.timestamp is None
        if last.run_id is None or last.conversation_id is None or undated:
            stamped = replace(
                last,
                run_id=last.run_id or state.ctx.run_id,
                conversation_id=last.conversation_id or state.ctx.conversation_id,
            )
            if undated:
                stamped.timestamp = now_utc()
            state.history[-1] = stamped
            if sent and sent[-1] is last:
                sent[-1] = stamped


@dataclass
class CallToolsNode:
    """Acts on a response: runs its tool calls, accepts its output, or asks the model to retry."""

    model_response: ModelResponse
    deferred: DeferredToolResults | None = None
    streamed_text: bool = False
    """`run_stream` handed this response over as the final one on its text (see `ToolStep`)."""
    streamed_call: str | None = None
    """... or on this output call (its id)."""
    user_prompt: Any = None
    """A prompt given with `deferred_tool_results`: sent after the resumed calls' results."""
    streamed_next: Any = field(default=None, repr=False, compare=False)
    """The node after this one, once `stream(agent_run.ctx)` ran it."""

    def stream(self, ctx: Any) -> AbstractAsyncContextManager[AsyncIterator[Any]]:
        """Run the calls with `agent_run.ctx`, and stream their events (see `_node_stream`)."""
        return stream_tools_node(self, ctx)

    async def run(self, state: RunState) -> ModelRequestNode | End[FinalResult[Any]]:
        response = self.model_response
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        if calls and response is not state.history[-1]:
            index = next(i for i in range(len(state.history) - 1, -1, -1) if state.history[i] is response)
            calls = _unanswered_calls(state.history, index)
        if not calls:
            return await self._handle_text(state, response)
        if state.resolved_step is None:  # resumed with deferred results: no request came first
            await state.resolve_tools()
        text = ''.join(p.content for p in response.parts if isinstance(p, TextPart))
        outcome = await ToolStep(
            state, calls, self.deferred, text=text, streamed_text=self.streamed_text, streamed_call=self.streamed_call
        ).run()
        if isinstance(outcome, End):
            return outcome
        if self.user_prompt is not None:
            outcome.append(UserPromptPart(self.user_prompt))
        return await queue_request(state, outcome)

    async def _handle_text(self, state: RunState, response: ModelResponse) -> ModelRequestNode | End[FinalResult[Any]]:
        empty = without_output(response)
        if empty:
            refuse_cut_short(state, response)
            if state.output.allows_none:  # no output is the output `None`
                try:
                    return End(
                        FinalResult(
                            await validate_output(state, await state.output.from_none(state.ctx, state.capabilities))
                        )
                    )
                except ModelRetry as retry:
                    return await retry_feedback(state, retry.message, cause='model_retry')
        texts = [p.content for p in response.parts if isinstance(p, TextPart)]
        if texts and not empty and state.output.accepts_text:
            text = ''.join(texts)
            try:
                output = await validate_output(state, await state.output.from_text(state.ctx, state.capabilities, text))
            except ModelRetry as retry:
                return await retry_feedback(state, retry.message, cause='model_retry')
            except ToolArgsError as invalid:
                # pydantic's own `loc` tuples, as the reference keeps them for a text answer (a
                # tool call's errors carry lists); both are JSON arrays on the wire.
                errors = [
                    {**e, 'loc': tuple(e['loc'])} if isinstance(e.get('loc'), list) else e for e in invalid.errors
                ]
                return await retry_feedback(state, errors, cause='validation_error')
            return End(FinalResult(output))
        message = 'Please return text.' if state.output.allow_text else 'Please include your response in a tool call.'
        return await retry_feedback(state, message, cause='no_output')


async def queue_request(state: RunState, parts: list[ModelRequestPart]) -> ModelRequestNode:
    """Add the next request (tool results, feedback) to the history now, so the boundary after the
    node that produced it is settled: a store sees the results before the next model call."""
    request = ModelRequest(parts=parts, timestamp=now_utc())
    if state.capabilities.deferred:  # a load in these results counts from this request on
        state.refresh_loaded([*state.history, request])
    request.instructions = await state.instructions()
    state.append(request)
    return ModelRequestNode(request, in_history=True)


async def retry_feedback(state: RunState, message: str | list[dict[str, Any]], *, cause: str) -> ModelRequestNode:
    state.output_retries += 1
    if state.output_retries > state.max_output_retries:
        check_incomplete_tool_call(state)
        raise UnexpectedModelBehavior(f'Exceeded maximum output retries ({state.max_output_retries})')
    part = RetryFeedbackPart(
        message, retry=RetryInfo(cause, attempt=state.output_retries, max_retries=state.max_output_retries)
    )
    return await queue_request(state, [part])


async def retry_after_hook(state: RunState, retry: ModelRetry) -> ModelRequestNode:
    """A model request hook raised `ModelRetry`: its message goes back to the model as a retry
    prompt (counted against the output retries, as pydantic-ai 2.62 counts it)."""
    return await retry_feedback(state, retry.message, cause='model_retry')


AgentNode = UserPromptNode | ModelRequestNode | CallToolsNode
NodeResult = ModelRequestNode | CallToolsNode | End[FinalResult[Any]]
