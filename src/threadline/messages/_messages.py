"""`ModelRequest` and `ModelResponse`: the two kinds of message a history is made of."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, UnsetType

from threadline.exceptions import UserError
from threadline.messages._base import LegacyName, WireStruct, legacy_field
from threadline.messages._content import BinaryContent, BinaryImage
from threadline.messages._parts import (
    CompactionPart,
    FilePart,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolAvailabilityDeltaPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    now_utc,
)
from threadline.messages._usage import RequestUsage

__all__ = [
    'FinishReason',
    'ModelMessage',
    'ModelRequest',
    'ModelRequestPart',
    'ModelRequestState',
    'ModelResponse',
    'ModelResponsePart',
    'ModelResponseState',
    'parts_assignments',
]

ModelRequestPart = (
    SystemPromptPart
    | UserPromptPart
    | ToolReturnPart
    | RetryFeedbackPart
    | RetryPromptPart
    | CompactionPart
    | ToolAvailabilityDeltaPart
)
ModelResponsePart = (
    TextPart | ThinkingPart | ToolCallPart | NativeToolCallPart | NativeToolReturnPart | FilePart | CompactionPart
)
ModelRequestState = Literal['complete', 'interrupted']
ModelResponseState = Literal['complete', 'incomplete', 'suspended', 'interrupted']
FinishReason = Literal['stop', 'length', 'content_filter', 'tool_call', 'error']


_PARTS_ASSIGNED = [0]


def parts_assignments() -> int:
    """How many times, in this process, a message's `parts` attribute has been assigned.

    A history's prepared form (`threadline.models.PreparedHistory`) is reused while the same
    message objects hold the same parts lists; when this count has not moved since, no message
    anywhere got a new parts list, so the lists need not be compared one by one.
    """
    return _PARTS_ASSIGNED[0]


def _counting_setattr(self: msgspec.Struct, name: str, value: Any) -> None:
    if name == 'parts':
        _PARTS_ASSIGNED[0] += 1
    msgspec.Struct.__setattr__(self, name, value)


class _RequestFields(WireStruct, tag_field='kind'):
    parts: list[ModelRequestPart]

    __setattr__ = _counting_setattr  # constructing and decoding do not pass through it


class ModelRequest(_RequestFields, kw_only=True, tag='request'):
    """A message sent to the model: prompts, tool results, feedback.

    `timestamp` is left None until the request is sent; `instructions` is the instruction text the
    request was sent with (stored for the record, never re-sent by a later run); `metadata` is for
    the application and never reaches a model. `state='interrupted'` marks a request whose
    assembly was cut short (a crash or cancellation during tool execution).
    """

    timestamp: datetime | None = None
    instructions: str | None = None
    run_id: str | None = None
    conversation_id: str | None = None
    metadata: dict[str, Any] | None = None
    state: ModelRequestState = 'complete'

    kind: ClassVar[str] = 'request'
    _tag_after: ClassVar[str] = 'instructions'  # where `asdict` shows `kind`, as pydantic-ai's

    @classmethod
    def user_text_prompt(cls, user_prompt: str, *, instructions: str | None = None) -> ModelRequest:
        """A request holding one user prompt."""
        return cls(parts=[UserPromptPart(user_prompt)], instructions=instructions)


class _ResponseFields(WireStruct, tag_field='kind'):
    parts: list[ModelResponsePart]

    __setattr__ = _counting_setattr


class ModelResponse(_ResponseFields, kw_only=True, tag='response'):
    """A message the model sent back: text, thinking, tool calls, files, with its usage.

    `timestamp` is when Threadline received it. `state` is `'complete'`, `'incomplete'` (a
    streaming snapshot), `'suspended'` (the provider paused the turn) or `'interrupted'` (the
    stream was cancelled, or a usage limit stopped the run before acting on it).
    """

    usage: RequestUsage = msgspec.field(default_factory=RequestUsage)
    model_name: str | None = None
    model_id: str | UnsetType = UNSET
    timestamp: datetime = msgspec.field(default_factory=now_utc)
    provider_name: str | None = None
    provider_url: str | None = None
    canonical_system: Any | UnsetType = UNSET
    provider_details: dict[str, Any] | None = None
    provider_response_id: str | None = None
    finish_reason: FinishReason | None = None
    run_id: str | None = None
    conversation_id: str | None = None
    metadata: dict[str, Any] | None = None
    workspace_ref: dict[str, Any] | None = None
    history_digest: str | None = None
    failed_attempts: list[dict[str, Any]] | None = None
    state: ModelResponseState = 'complete'
    _legacy_vendor_details: LegacyName | UnsetType = legacy_field('vendor_details')
    _legacy_vendor_id: LegacyName | UnsetType = legacy_field('vendor_id')

    kind: ClassVar[str] = 'response'
    _tag_after: ClassVar[str] = 'timestamp'

    @property
    def text(self) -> str | None:
        """The text parts joined, or None when the response has none."""
        texts = [p.content for p in self.parts if isinstance(p, TextPart)]
        return '\n\n'.join(texts) if texts else None

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def thinking(self) -> str | None:
        texts = [p.content for p in self.parts if isinstance(p, ThinkingPart)]
        return '\n\n'.join(texts) if texts else None

    @property
    def files(self) -> list[BinaryContent]:
        """The files the response holds (each `FilePart`'s content), as pydantic-ai returns them."""
        return [p.content for p in self.parts if isinstance(p, FilePart)]

    @property
    def images(self) -> list[BinaryImage]:
        return [f for f in self.files if isinstance(f, BinaryImage)]

    def cost(self) -> Any:
        """The response's price from genai-prices (extra `prices`): its `PriceCalculation`.
        Raises `LookupError` when genai-prices does not know the model, and `ValueError` when the
        response has no model name or omitted its usage (the price would be short)."""
        if not self.model_name:
            raise ValueError('a response without a model name has no price')
        if self.usage.unmeasured_requests:
            raise ValueError('the response omitted its usage (`usage.unmeasured_requests`): its price would be short')
        try:
            from genai_prices import calc_price
        except ImportError:
            raise UserError("a price needs genai-prices: pip install 'threadline[prices]'") from None
        timestamp = self.timestamp
        if self.provider_url:
            try:
                return calc_price(
                    self.usage, self.model_name, provider_api_url=self.provider_url, genai_request_timestamp=timestamp
                )
            except LookupError:
                pass  # an API URL genai-prices does not know: the provider's name may still match
        return calc_price(
            self.usage, self.model_name, provider_id=self.provider_name, genai_request_timestamp=timestamp
        )

    @property
    def native_tool_calls(self) -> list[tuple[NativeToolCallPart, NativeToolReturnPart]]:
        """Each provider-run tool call paired with its return (calls without one are left out)."""
        returns = {p.tool_call_id: p for p in self.parts if isinstance(p, NativeToolReturnPart)}
        return [
            (p, returns[p.tool_call_id])
            for p in self.parts
            if isinstance(p, NativeToolCallPart) and p.tool_call_id in returns
        ]


ModelMessage = ModelRequest | ModelResponse
