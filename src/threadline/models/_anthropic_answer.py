"""Reading Anthropic's answers: a whole `Message`, or the events of a streamed one, as Threadline
parts, usage and a finish reason (the request side is `anthropic.py`).

Rules: text, thinking (with its signature) and tool calls become their parts; server tool calls
and their results are kept as native parts; an answer without content is `UnexpectedModelBehavior`;
a stream's usage is the start's input counts with the last delta's output count.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from threadline.exceptions import UnexpectedModelBehavior
from threadline.messages import (
    FinishReason,
    ModelResponse,
    ModelResponsePart,
    NativeToolCallPart,
    NativeToolReturnPart,
    RequestUsage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from threadline.models._stream import ModelStreamEvent, StreamedResponse

__all__ = ['AnthropicStream', 'response_of']

_STOP: dict[str, FinishReason] = {
    'end_turn': 'stop',
    'max_tokens': 'length',
    'tool_use': 'tool_call',
    'stop_sequence': 'stop',
    'refusal': 'content_filter',
    'pause_turn': 'stop',
}


def response_of(message: Any) -> ModelResponse:
    """The response an answer (`anthropic.types.Message`) carries."""
    parts: list[ModelResponsePart] = []
    for block in getattr(message, 'content', None) or []:
        kind = block.type
        if kind == 'text':
            parts.append(TextPart(block.text))
        elif kind == 'thinking':
            parts.append(ThinkingPart(block.thinking, signature=block.signature, provider_name='anthropic'))
        elif kind == 'tool_use':
            parts.append(ToolCallPart(block.name, dict(block.input), block.id))
        elif kind == 'server_tool_use':
            parts.append(NativeToolCallPart(block.name, dict(block.input), block.id, provider_name='anthropic'))
        elif kind.endswith('_tool_result'):
            parts.append(
                NativeToolReturnPart(
                    kind,
                    block.model_dump(mode='json'),
                    getattr(block, 'tool_use_id', ''),
                    provider_name='anthropic',
                )
            )
    if not hasattr(message, 'content'):
        raise UnexpectedModelBehavior('the provider answered without content', repr(message))
    return ModelResponse(
        parts=parts,
        usage=_usage(message.usage),
        model_name=message.model,
        provider_name='anthropic',
        provider_response_id=message.id,
        finish_reason=_STOP.get(message.stop_reason or ''),
    )


class AnthropicStream(StreamedResponse):
    """A streamed answer: the SDK's raw stream events as Threadline's part events."""

    def __init__(self, model_name: str, stream: Any) -> None:
        super().__init__(model_name, 'anthropic')
        self._stream = stream

    async def _events(self) -> AsyncIterator[ModelStreamEvent]:
        async for event in self._stream:
            kind = event.type
            if kind == 'message_start':
                self.provider_response_id = event.message.id
                self.model_name = event.message.model
                self.usage = _usage(event.message.usage)
            elif kind == 'content_block_start':
                block = event.content_block
                if block.type == 'text':
                    yield self.parts.text(event.index, block.text)
                elif block.type == 'thinking':
                    yield self.parts.thinking(
                        event.index, block.thinking, getattr(block, 'signature', None) or None, 'anthropic'
                    )
                elif block.type == 'tool_use':
                    yield self.parts.tool_call(event.index, block.name, '', block.id)
            elif kind == 'content_block_delta':
                delta = event.delta
                if delta.type == 'text_delta':
                    yield self.parts.text(event.index, delta.text)
                elif delta.type == 'input_json_delta':
                    yield self.parts.tool_call(event.index, None, delta.partial_json, None)
                elif delta.type == 'thinking_delta':
                    yield self.parts.thinking(event.index, delta.thinking)
                elif delta.type == 'signature_delta':
                    yield self.parts.thinking(event.index, None, delta.signature)
            elif kind == 'message_delta':
                self.finish_reason = _STOP.get(event.delta.stop_reason or '')
                usage = getattr(event, 'usage', None)
                if usage is not None and getattr(usage, 'output_tokens', None) is not None:
                    self.usage = RequestUsage(
                        input_tokens=self.usage.input_tokens,
                        output_tokens=usage.output_tokens,
                        cache_read_tokens=self.usage.cache_read_tokens,
                        cache_write_tokens=self.usage.cache_write_tokens,
                    )


def _usage(usage: object) -> RequestUsage:
    if usage is None:
        return RequestUsage()
    return RequestUsage(
        input_tokens=getattr(usage, 'input_tokens', 0) or 0,
        output_tokens=getattr(usage, 'output_tokens', 0) or 0,
        cache_write_tokens=getattr(usage, 'cache_creation_input_tokens', 0) or 0,
        cache_read_tokens=getattr(usage, 'cache_read_input_tokens', 0) or 0,
    )
