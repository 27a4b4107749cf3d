"""`Instrumentation`: OpenTelemetry spans for runs, model requests and tool calls, in the shape
OpenTelemetry's GenAI conventions and pydantic-ai 2.62 give them, so Logfire and other backends
render a Threadline run as they render a pydantic-ai one.

- a span per run (`invoke_agent <agent name>`) with `gen_ai.agent.call.id` (the run id),
  `gen_ai.conversation.id` and the run's usage (`gen_ai.aggregated_usage.*`); under it a span per
  model request (`chat <model>`, its usage and models) and per tool call (`execute_tool <tool>`,
  the tool's name and call id), each the current span while it runs;
- messages are recorded in the GenAI shape (`_otel_messages`): `gen_ai.input.messages` and
  `gen_ai.output.messages` on each request, the run's final history in `pydantic_ai.all_messages`
  (the key those backends read for a run). Without `include_content=True` (the default) only
  their structure is recorded (roles, part types, tool names and ids), and no instructions, tool
  arguments, tool results or final output: traces carry ids, counts and usage, never what
  people said;
- each message is converted once, when first recorded, and the fragment is reused by later
  request spans (O(N) over a run instead of O(N^2) over its requests); at the end of the run one
  pass converts them again, and a message mutated in place since it was recorded raises
  `MessageHistoryMutatedWarning` (replace messages, don't edit them). The run span's final history
  is always converted fresh;
- an error is recorded on its span by type (with its text and stack only with content).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from threadline.agent.capability import AbstractCapability, CapabilityDepsT, ModelRequestContext
from threadline.capabilities._otel_messages import otel_messages, system_instructions
from threadline.exceptions import MessageHistoryMutatedWarning
from threadline.messages import ModelMessage, ModelResponse, ToolCallPart
from threadline.messages.wire import encoder

if TYPE_CHECKING:
    from opentelemetry.trace import Span, TracerProvider

    from threadline.agent import AgentRunResult, RunContext
    from threadline.models import ToolDefinition

__all__ = ['Instrumentation', 'MessageHistoryMutatedWarning']


Fragments = dict[int, tuple[ModelMessage, Sequence[object], bytes]]
"""Each message's converted JSON by `id()`, with the message and its parts list it was made from (a
fragment is reused only while both are the same objects: nothing was replaced in place)."""


@dataclass
class _RunSpans:
    """One run's open spans, and the JSON of the messages it has shown them."""

    span: Span
    agent_name: str
    cache: Fragments = field(default_factory=dict)
    request: Span | None = None
    instructions: str | None = None


class Instrumentation(AbstractCapability[CapabilityDepsT]):
    """Records runs, model requests and tool calls as OpenTelemetry spans (see the module docstring)."""

    def __init__(self, *, tracer_provider: TracerProvider | None = None, include_content: bool = False) -> None:

        from opentelemetry import trace

        self._trace = trace
        provider = tracer_provider or trace.get_tracer_provider()
        self._tracer = provider.get_tracer('threadline')
        self.include_content = include_content
        self.serializations = 0
        self._runs: dict[str, _RunSpans] = {}

    # -- messages ---------------------------------------------------------------------------------
    def _convert(self, message: ModelMessage) -> bytes:
        self.serializations += 1
        return b','.join(encoder.encode(m) for m in otel_messages([message], include_content=self.include_content))

    def _fragment(self, cache: Fragments, message: ModelMessage) -> bytes:
        entry = cache.get(id(message))
        if entry is not None and entry[0] is message and entry[1] is message.parts:
            return entry[2]
        fragment = self._convert(message)
        cache[id(message)] = (message, message.parts, fragment)
        return fragment

    def _messages_json(self, cache: Fragments, messages: list[ModelMessage]) -> str:
        fragments = [f for f in (self._fragment(cache, m) for m in messages) if f]
        return (b'[' + b','.join(fragments) + b']').decode()

    def _ids(self, ctx: RunContext[CapabilityDepsT], run: _RunSpans) -> dict[str, Any]:
        return {
            'gen_ai.agent.name': run.agent_name,
            'gen_ai.agent.call.id': ctx.run_id,
            'gen_ai.conversation.id': ctx.conversation_id,
        }

    # -- the run ----------------------------------------------------------------------------------
    async def before_run(self, ctx: RunContext[CapabilityDepsT]) -> None:
        name = (ctx.agent.name if ctx.agent is not None else None) or 'agent'
        span = self._tracer.start_span(
            f'invoke_agent {name}',
            attributes={
                'gen_ai.operation.name': 'invoke_agent',
                'gen_ai.agent.name': name,
                'gen_ai.agent.call.id': ctx.run_id,
                'gen_ai.conversation.id': ctx.conversation_id,
            },
        )
        self._runs[ctx.run_id] = _RunSpans(span, name)

    async def after_run(self, ctx: RunContext[CapabilityDepsT], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        run = self._runs.pop(ctx.run_id, None)
        if run is None:
            return result
        span = run.span
        span.set_attribute('gen_ai.aggregated_usage.input_tokens', result.run_usage.input_tokens)
        span.set_attribute('gen_ai.aggregated_usage.output_tokens', result.run_usage.output_tokens)
        history, mutated = self._final_pass(run.cache, result.all_messages())
        span.set_attribute('pydantic_ai.all_messages', history)
        if self.include_content:
            span.set_attribute('final_result', _json_text(result.output))
            if run.instructions:
                span.set_attribute('gen_ai.system_instructions', json.dumps(system_instructions(run.instructions)))
        if mutated:
            warnings.warn(
                f'In-place mutation of {mutated} message(s) already in the history was detected: spans recorded '
                'before it show the old content. Replace messages with dataclasses.replace instead of editing them.',
                MessageHistoryMutatedWarning,
                stacklevel=2,
            )
        span.end()
        return result

    def _final_pass(self, cache: Fragments, messages: list[ModelMessage]) -> tuple[str, int]:
        """The second pass: convert the final history fresh, and count the recorded messages whose
        conversion changed since (mutated in place)."""
        fragments = []
        mutated = 0
        for message in messages:
            fragment = self._convert(message)
            entry = cache.get(id(message))
            if entry is not None and entry[0] is message and entry[1] is message.parts and entry[2] != fragment:
                mutated += 1
            if fragment:
                fragments.append(fragment)
        return (b'[' + b','.join(fragments) + b']').decode(), mutated

    async def on_run_error(self, ctx: RunContext[CapabilityDepsT], *, error: BaseException) -> AgentRunResult[Any]:
        run = self._runs.pop(ctx.run_id, None)
        if run is not None:
            for span in (run.request, run.span):
                if span is not None:
                    self._record_error(span, error)
                    span.end()
        raise error

    # -- model requests ---------------------------------------------------------------------------
    async def before_model_request(
        self, ctx: RunContext[CapabilityDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        run = self._runs.get(ctx.run_id)
        if run is None:
            return request_context
        model = request_context.model
        span = self._tracer.start_span(
            f'chat {model.model_name}',
            context=self._trace.set_span_in_context(run.span),
            attributes={
                'gen_ai.operation.name': 'chat',
                **({'gen_ai.provider.name': model.system, 'gen_ai.system': model.system} if model.system else {}),
                'gen_ai.request.model': model.model_name,
                **self._ids(ctx, run),
                'gen_ai.input.messages': self._messages_json(run.cache, request_context.messages),
            },
        )
        instructions = _instructions(request_context.messages)
        if self.include_content and instructions:
            run.instructions = instructions
            span.set_attribute('gen_ai.system_instructions', json.dumps(system_instructions(instructions)))
        run.request = span
        return request_context

    async def after_model_request(
        self, ctx: RunContext[CapabilityDepsT], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        run = self._runs.get(ctx.run_id)
        if run is not None and run.request is not None:
            span = run.request
            span.set_attribute('gen_ai.output.messages', self._messages_json(run.cache, [response]))
            span.set_attribute('gen_ai.usage.input_tokens', response.usage.input_tokens)
            span.set_attribute('gen_ai.usage.output_tokens', response.usage.output_tokens)
            if response.model_name:
                span.set_attribute('gen_ai.response.model', response.model_name)
            span.end()
            run.request = None
        return response

    async def on_model_request_error(
        self, ctx: RunContext[CapabilityDepsT], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        run = self._runs.get(ctx.run_id)
        if run is not None and run.request is not None:
            self._record_error(run.request, error)
            run.request.end()
            run.request = None
        raise error

    # -- tool calls -------------------------------------------------------------------------------
    async def wrap_tool_execute(
        self,
        ctx: RunContext[CapabilityDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
        handler: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        run = self._runs.get(ctx.run_id)
        if run is None:
            return await handler(args)
        attributes: dict[str, Any] = {
            'gen_ai.operation.name': 'execute_tool',
            'gen_ai.tool.name': call.tool_name,
            'gen_ai.tool.call.id': call.tool_call_id,
            **self._ids(ctx, run),
        }
        if self.include_content:
            attributes['gen_ai.tool.call.arguments'] = _json_text(args)
        parent = self._trace.set_span_in_context(run.span)
        with self._tracer.start_as_current_span(
            f'execute_tool {call.tool_name}',
            context=parent,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,  # its text could carry content: _record_error says what it was
        ) as span:
            try:
                result = await handler(args)
            except BaseException as error:
                self._record_error(span, error)
                raise
            if self.include_content:
                span.set_attribute('gen_ai.tool.call.result', _json_text(result))
            return result

    def _record_error(self, span: Span, error: BaseException) -> None:
        """The exception on the span: in full (message and stack) only when content was asked for;
        otherwise its type and the length of its message (`threadline._errors`)."""
        if self.include_content:
            span.record_exception(error)
        else:
            span.add_event(
                'exception',
                {'exception.type': type(error).__qualname__, 'exception.message_length': len(str(error))},
            )
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, type(error).__name__))


def _instructions(messages: Sequence[ModelMessage]) -> str | None:
    """The instructions of the request about to be sent (its last request's)."""
    for message in reversed(messages):
        if not isinstance(message, ModelResponse):
            return getattr(message, 'instructions', None)
    return None


def _json_text(value: object) -> str:
    """A value as a span attribute: text as it is, anything else as JSON (its repr when it has none)."""
    if isinstance(value, str):
        return value
    try:
        return encoder.encode(value).decode()
    except (TypeError, ValueError):
        return repr(value)
