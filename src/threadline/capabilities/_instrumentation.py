"""`Instrumentation`: OpenTelemetry spans for runs and model requests.

- a span per run (`agent run`) with `gen_ai.agent.call.id` (the run id) and
  `gen_ai.conversation.id`, and a child span per model request;
- message content (`gen_ai.input.messages`, `gen_ai.output.messages`, and the run's final history
  in `threadline.all_messages`) is recorded only with `include_content=True`: off by default, so
  traces carry ids, counts and usage, never what people said;
- each message is serialized once, when first recorded, and the fragment is reused by later
  request spans (O(N) over a run instead of O(N^2) over its requests); at the end of the run one
  pass re-serializes them, and a message mutated in place since it was recorded raises
  `MessageHistoryMutatedWarning` (replace messages, don't edit them). The run span's final history
  is always serialized fresh.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from threadline.agent.capability import AbstractCapability, CapabilityDepsT, ModelRequestContext
from threadline.messages import ModelMessage, ModelResponse
from threadline.messages.wire import encoder

if TYPE_CHECKING:
    from opentelemetry.trace import Span, TracerProvider

    from threadline.agent import AgentRunResult, RunContext

__all__ = ['Instrumentation', 'MessageHistoryMutatedWarning']


class MessageHistoryMutatedWarning(UserWarning):
    """A message already recorded in a span was changed in place; earlier spans show the old content."""


Fragments = dict[int, tuple[ModelMessage, Sequence[object], bytes]]
"""Each message's JSON by `id()`, with the message and its parts list it was made from (a fragment is
reused only while both are the same objects: nothing was replaced in place)."""


@dataclass
class _RunSpans:
    """One run's open spans, and the JSON of the messages it has shown them."""

    span: Span
    cache: Fragments = field(default_factory=dict)
    request: Span | None = None


class Instrumentation(AbstractCapability[CapabilityDepsT]):
    """Records runs and model requests as OpenTelemetry spans (see the module docstring)."""

    def __init__(self, *, tracer_provider: TracerProvider | None = None, include_content: bool = False) -> None:

        from opentelemetry import trace

        self._trace = trace
        provider = tracer_provider or trace.get_tracer_provider()
        self._tracer = provider.get_tracer('threadline')
        self.include_content = include_content
        self.serializations = 0
        self._runs: dict[str, _RunSpans] = {}

    def _fragment(self, cache: Fragments, message: ModelMessage) -> bytes:
        entry = cache.get(id(message))
        if entry is not None and entry[0] is message and entry[1] is message.parts:
            return entry[2]
        self.serializations += 1
        fragment = encoder.encode(message)
        cache[id(message)] = (message, message.parts, fragment)
        return fragment

    def _messages_json(self, cache: Fragments, messages: list[ModelMessage]) -> str:
        return (b'[' + b','.join(self._fragment(cache, m) for m in messages) + b']').decode()

    async def before_run(self, ctx: RunContext[CapabilityDepsT]) -> None:
        span = self._tracer.start_span(
            'agent run',
            attributes={
                'gen_ai.operation.name': 'invoke_agent',
                'gen_ai.agent.call.id': ctx.run_id,
                'gen_ai.conversation.id': ctx.conversation_id,
                **({'gen_ai.agent.name': ctx.agent.name} if ctx.agent is not None and ctx.agent.name else {}),
            },
        )
        self._runs[ctx.run_id] = _RunSpans(span)

    async def before_model_request(
        self, ctx: RunContext[CapabilityDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        run = self._runs.get(ctx.run_id)
        if run is None:
            return request_context
        parent = self._trace.set_span_in_context(run.span)
        model = request_context.model
        span = self._tracer.start_span(
            f'chat {model.model_name}',
            context=parent,
            attributes={
                'gen_ai.operation.name': 'chat',
                'gen_ai.request.model': model.model_name,
                'gen_ai.agent.call.id': ctx.run_id,
                'gen_ai.conversation.id': ctx.conversation_id,
            },
        )
        if self.include_content:
            span.set_attribute('gen_ai.input.messages', self._messages_json(run.cache, request_context.messages))
        run.request = span
        return request_context

    async def after_model_request(
        self, ctx: RunContext[CapabilityDepsT], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        run = self._runs.get(ctx.run_id)
        if run is not None and run.request is not None:
            span = run.request
            span.set_attribute('gen_ai.usage.input_tokens', response.usage.input_tokens)
            span.set_attribute('gen_ai.usage.output_tokens', response.usage.output_tokens)
            if response.model_name:
                span.set_attribute('gen_ai.response.model', response.model_name)
            if self.include_content:
                span.set_attribute('gen_ai.output.messages', self._messages_json(run.cache, [response]))
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

    async def after_run(self, ctx: RunContext[CapabilityDepsT], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        run = self._runs.pop(ctx.run_id, None)
        if run is None:
            return result
        span = run.span
        span.set_attribute('gen_ai.usage.input_tokens', result.run_usage.input_tokens)
        span.set_attribute('gen_ai.usage.output_tokens', result.run_usage.output_tokens)
        if self.include_content:
            history, mutated = self._final_pass(run.cache, result.all_messages())
            span.set_attribute('threadline.all_messages', history)
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
        """The second pass: serialize the final history fresh, and count the recorded messages whose
        serialization changed since (mutated in place)."""
        fragments = []
        mutated = 0
        for message in messages:
            fragment = encoder.encode(message)
            self.serializations += 1
            entry = cache.get(id(message))
            if entry is not None and entry[0] is message and entry[1] is message.parts and entry[2] != fragment:
                mutated += 1
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
