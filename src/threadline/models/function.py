"""`FunctionModel`: a model whose responses come from a function you write, for tests.

The function receives the messages exactly as a provider would (repaired and rendered for the
model's profile) and an `AgentInfo` describing what the agent offers on this request.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from threadline.messages import ModelMessage, ModelResponse, RequestUsage
from threadline.models._base import Model, ModelProfile, ModelRequestParameters, ModelSettings, ToolDefinition
from threadline.models._estimate import estimate_tokens, estimate_usage
from threadline.models._profile import ModelProfileSpec, resolve_profile
from threadline.models._stream import ModelStreamEvent, StreamedResponse
from threadline.models._thinking import resolve_thinking

__all__ = ['AgentInfo', 'DeltaThinkingPart', 'DeltaToolCall', 'FunctionDef', 'FunctionModel', 'StreamFunctionDef']


@dataclass
class AgentInfo:
    """What the agent offers the model on this request."""

    function_tools: list[ToolDefinition]
    allow_text_output: bool
    output_tools: list[ToolDefinition]
    model_settings: ModelSettings | None
    model_request_parameters: ModelRequestParameters
    instructions: str | None


@dataclass
class DeltaToolCall:
    """A streamed piece of a tool call (name and/or a chunk of JSON arguments)."""

    name: str | None = None
    json_args: str | None = None
    tool_call_id: str | None = None


@dataclass
class DeltaThinkingPart:
    """A streamed piece of thinking."""

    content: str | None = None
    signature: str | None = None


FunctionDef = Callable[[list[ModelMessage], AgentInfo], ModelResponse | Awaitable[ModelResponse]]
StreamFunctionDef = Callable[[list[ModelMessage], AgentInfo], AsyncIterator[Any]]


class FunctionModel(Model):
    """A model driven by `function(messages, info)` (sync or async) and/or `stream_function`."""

    def __init__(
        self,
        function: FunctionDef | None = None,
        *,
        stream_function: StreamFunctionDef | None = None,
        model_name: str | None = None,
        profile: ModelProfileSpec | None = None,
    ) -> None:
        if function is None and stream_function is None:
            raise TypeError('FunctionModel needs `function`, `stream_function`, or both')
        self.function = function
        self.stream_function = stream_function
        if model_name is None:
            fn_name = _name_of(function) if function is not None else ''
            stream_name = _name_of(stream_function) if stream_function is not None else ''
            model_name = f'function:{fn_name}:{stream_name}'
        self._model_name = model_name
        self._profile = resolve_profile(ModelProfile(supports_json_schema_output=True), profile)

    @property
    def priced(self) -> bool:
        return False  # a local model: no price to look up

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def profile(self) -> ModelProfile:
        return self._profile

    async def request(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        if self.function is None:
            # Only a stream function: a non-streamed request takes the whole streamed response.
            async with self.request_stream(messages, model_settings, model_request_parameters) as stream:
                async for _ in stream:
                    pass
                whole: ModelResponse = stream.get()
                return whole
        info = _agent_info(model_settings, model_request_parameters, self._profile)
        # The list itself, as pydantic-ai passes it (the agent hands each request a fresh one).
        message_list = messages if type(messages) is list else list(messages)
        if inspect.iscoroutinefunction(self.function):
            response = await self.function(message_list, info)
        else:
            # In a copy of the caller's context, so context variables set by hooks reach the function.
            call = functools.partial(contextvars.copy_context().run, self.function, message_list, info)
            response = await asyncio.get_running_loop().run_in_executor(None, call)
            if inspect.isawaitable(response):
                response = await response
        if not isinstance(response, ModelResponse):
            raise TypeError(f'FunctionModel function must return a ModelResponse, got {type(response).__name__}')
        response.model_name = self._model_name
        if not response.usage.has_values():
            response.usage = estimate_usage([*messages, response])
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: object = None,
    ) -> AsyncIterator[Any]:
        if self.stream_function is None:
            async with super().request_stream(messages, model_settings, model_request_parameters) as stream:
                yield stream
            return
        info = _agent_info(model_settings, model_request_parameters, self._profile)
        source = self.stream_function(messages if type(messages) is list else list(messages), info)
        try:
            yield _FunctionStream(self, source, messages)
        finally:  # a stream left before its end is closed now, so its `finally` runs now
            aclose = getattr(source, 'aclose', None)
            if aclose is not None:
                await aclose()


class _FunctionStream(StreamedResponse):
    """Events from a stream function: `str` text deltas, or `{index: DeltaToolCall | DeltaThinkingPart
    | built-in part}` mappings; arguments of streamed calls stay the concatenated JSON text."""

    def __init__(self, model: FunctionModel, source: AsyncIterator[Any], messages: Sequence[ModelMessage]) -> None:
        super().__init__(model.model_name, None)
        self._source = source
        # As in the reference: a stream function's usage is the overhead alone, plus each chunk.
        self.usage = estimate_usage([])

    def _count(self, text: str | None) -> None:
        self.usage = self.usage + RequestUsage(output_tokens=estimate_tokens(text))

    async def _events(self) -> AsyncIterator[ModelStreamEvent]:
        empty = True
        async for item in self._events_of():
            empty = False
            yield item
        if empty:
            raise ValueError('Stream function must return at least one item')

    async def _events_of(self) -> AsyncIterator[ModelStreamEvent]:
        async for item in self._source:
            if isinstance(item, str):
                self._count(item)
                yield self.parts.text('text', item)
                continue
            for key, delta in item.items():
                if isinstance(delta, DeltaToolCall):
                    self._count(delta.json_args)
                    yield self.parts.tool_call(key, delta.name, delta.json_args, delta.tool_call_id)
                elif isinstance(delta, DeltaThinkingPart):
                    self._count(delta.content)
                    yield self.parts.thinking(key, delta.content, delta.signature)
                else:
                    yield self.parts.whole(key, delta)


def _agent_info(settings: ModelSettings | None, params: ModelRequestParameters, profile: ModelProfile) -> AgentInfo:
    """What the function is told; `thinking` moves from the settings to the parameters, resolved
    against the model's profile (None unless `profile=` says the model thinks), as a provider
    model reads it."""
    if settings and 'thinking' in settings:
        params = replace(params, thinking=resolve_thinking(settings, params, profile))
        settings = {k: v for k, v in settings.items() if k != 'thinking'}  # type: ignore[assignment]
    return AgentInfo(
        function_tools=params.function_tools,
        allow_text_output=params.allow_text_output,
        output_tools=params.output_tools,
        model_settings=settings,
        model_request_parameters=params,
        instructions=params.instructions,
    )


def _name_of(function: Any) -> str:
    """A function's name; a callable object (a `functools.partial` too) goes by its class's, as
    pydantic-ai names it."""
    name = getattr(function, '__name__', None)
    return name if isinstance(name, str) else type(function).__name__
