"""The parts messages are made of: what a request sends to a model and what a response brings back."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, UnsetType

from threadline.messages._base import LegacyName, WireStruct, legacy_field
from threadline.messages._content import BinaryContent, UserContent
from threadline.messages._retry_text import feedback_reply, retry_prompt_text, speaks_for_framework
from threadline.messages._tool_return_reading import ToolReturnReading

__all__ = [
    'BuiltinToolCallPart',
    'BuiltinToolReturnPart',
    'CompactionPart',
    'FilePart',
    'NativeToolCallPart',
    'NativeToolReturnPart',
    'RetryFeedbackPart',
    'RetryInfo',
    'RetryPromptPart',
    'SystemPromptPart',
    'TextPart',
    'ThinkingPart',
    'ToolAvailabilityDeltaPart',
    'ToolCallPart',
    'ToolReturnContent',
    'ToolReturnOutcome',
    'ToolReturnPart',
    'UserPromptPart',
    'now_utc',
]

ToolReturnOutcome = Literal['success', 'failed', 'denied', 'interrupted', 'retried']
ToolPartKind = str


def now_utc() -> datetime:
    return datetime.now(tz=UTC)


def _new_tool_call_id() -> str:
    return f'pyd_ai_{uuid.uuid4().hex}'


if TYPE_CHECKING:
    ToolReturnContent = Any
else:

    class _AcceptsAnything(type):
        def __instancecheck__(cls, obj: object) -> bool:
            return True

    class ToolReturnContent(metaclass=_AcceptsAnything):
        """Marker type: msgspec hands a tool return's decoded content to the codec's `dec_hook`,
        which rebuilds multimodal items inside it (see `_tool_content`). Any value is accepted."""


class _RequestPart(WireStruct, tag_field='part_kind'):
    part_kind: ClassVar[str]


class _ResponsePart(WireStruct, tag_field='part_kind'):
    part_kind: ClassVar[str]


class RetryInfo(WireStruct):
    """Why a retry was asked for and which attempt it is."""

    cause: str
    attempt: int | None = msgspec.field(default=None)
    max_retries: int | None = None


class _SystemPromptFields(_RequestPart):
    content: str


class SystemPromptPart(_SystemPromptFields, kw_only=True, tag='system-prompt'):
    """Operator instructions. At the head of the first request it is the standing system prompt;
    anywhere else it is a mid-conversation instruction that stays where it was put."""

    timestamp: datetime = msgspec.field(default_factory=now_utc)
    dynamic_ref: str | None = None
    context_id: str | UnsetType = UNSET
    scope: Literal['conversation', 'request'] = 'conversation'
    metadata: dict[str, Any] | None = None

    part_kind: ClassVar[str] = 'system-prompt'


class _UserPromptFields(_RequestPart):
    content: str | list[UserContent]


class UserPromptPart(_UserPromptFields, kw_only=True, tag='user-prompt'):
    """What the user said: a string or a sequence of user content items."""

    timestamp: datetime = msgspec.field(default_factory=now_utc)

    part_kind: ClassVar[str] = 'user-prompt'


class _ToolReturnFields(_RequestPart):
    tool_name: str
    content: ToolReturnContent
    tool_call_id: str = msgspec.field(default_factory=_new_tool_call_id)


class ToolReturnPart(_ToolReturnFields, ToolReturnReading, kw_only=True, tag='tool-return'):
    """The result of a tool call, paired with its call by `tool_call_id`.

    `outcome` says how the call ended; a `retried` return asks the model to try again, a
    synthesized `interrupted` one stands in for a result a crash or cancellation never produced.
    """

    tool_kind: ToolPartKind | None = None
    metadata: Any = None
    timestamp: datetime = msgspec.field(default_factory=now_utc)
    outcome: ToolReturnOutcome = 'success'
    retry: RetryInfo | None = None
    content_file_digests: list[str] | UnsetType = UNSET

    part_kind: ClassVar[str] = 'tool-return'


class _RetryFeedbackFields(_RequestPart):
    content: str | list[dict[str, Any]]


class RetryFeedbackPart(_RetryFeedbackFields, kw_only=True, tag='retry-feedback'):
    """Feedback to the model that answers no tool call (output validation, a missing answer)."""

    retry: RetryInfo
    timestamp: datetime = msgspec.field(default_factory=now_utc)

    part_kind: ClassVar[str] = 'retry-feedback'

    @property
    def in_framework_voice(self) -> bool:
        """Whether this is one of the agent loop's own `no_output` texts ('Please return
        text.', ...), sent in the system voice; any other feedback goes in the user voice."""
        return speaks_for_framework(self.content, self.retry.cause)

    def model_response(self) -> str:
        """The text the model is sent (see `messages._retry_text`): fenced in the user voice,
        unless it is one of the framework's own `no_output` texts."""
        return feedback_reply(self.content, self.retry.cause)


class _RetryPromptFields(_RequestPart):
    content: str | list[dict[str, Any]]


class RetryPromptPart(_RetryPromptFields, kw_only=True, tag='retry-prompt'):
    """A request to the model to try again: for a tool call when `tool_name` is set, else for its output.

    The documents use this part; newer pydantic-ai writes `ToolReturnPart(outcome='retried')` or
    `RetryFeedbackPart` instead. Threadline loads and keeps it as it was written.
    """

    tool_name: str | None = None
    tool_call_id: str = msgspec.field(default_factory=_new_tool_call_id)
    timestamp: datetime = msgspec.field(default_factory=now_utc)

    part_kind: ClassVar[str] = 'retry-prompt'

    @classmethod
    def from_error(
        cls, error: Exception, *, tool_name: str | None = None, tool_call_id: str | None = None
    ) -> RetryPromptPart:
        """The retry for a pydantic `ValidationError` (its errors, without URLs or context) or a
        `ModelRetry` (its message)."""
        errors = getattr(error, 'errors', None)
        if callable(errors):
            content: str | list[dict[str, Any]] = errors(include_url=False, include_context=False)
        else:
            content = str(getattr(error, 'message', error))
        if tool_call_id:
            return cls(content, tool_name=tool_name, tool_call_id=tool_call_id)
        return cls(content, tool_name=tool_name)

    def model_response(self) -> str:
        """The text the legacy part read as to the model (see `messages._retry_text`)."""
        return retry_prompt_text(self.content, self.tool_name)


class _CompactionFields(WireStruct, tag_field='part_kind'):
    content: str | None = None


class CompactionPart(_CompactionFields, kw_only=True, tag='compaction'):
    """A summary standing in for earlier history: written by the application (in a request) or by a
    provider (in a response). It never stands in for the system prompt."""

    id: str | None = None
    provider_name: str | None = None
    provider_details: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None

    part_kind: ClassVar[str] = 'compaction'

    def has_content(self) -> bool:
        """Whether the summary has any text."""
        return bool(self.content)


class ToolAvailabilityDeltaPart(_RequestPart, kw_only=True, tag='tool-availability-delta'):
    """Records tools that became available during the conversation (data only for now)."""

    tools_added: list[str] = msgspec.field(default_factory=list)
    tool_call_id: str | None = None
    _legacy_added: LegacyName | UnsetType = legacy_field('added')

    part_kind: ClassVar[str] = 'tool-availability-delta'


class _TextFields(_ResponsePart):
    content: str


class TextPart(_TextFields, kw_only=True, tag='text'):
    """Text the model wrote."""

    id: str | None = None
    provider_name: str | None = None
    provider_details: dict[str, Any] | None = None
    citations: list[Any] | None = None

    part_kind: ClassVar[str] = 'text'

    def has_content(self) -> bool:
        return bool(self.content)


class _ThinkingFields(_ResponsePart):
    content: str


class ThinkingPart(_ThinkingFields, kw_only=True, tag='thinking'):
    """The model's reasoning, with the provider's signature where it needs the block sent back."""

    id: str | None = None
    signature: str | None = None
    provider_name: str | None = None
    provider_details: dict[str, Any] | None = None

    part_kind: ClassVar[str] = 'thinking'

    def has_content(self) -> bool:
        return bool(self.content)


class _ToolCallFields(_ResponsePart):
    tool_name: str
    args: str | dict[str, Any] | None = None
    tool_call_id: str = msgspec.field(default_factory=_new_tool_call_id)


class _ToolCallBase(_ToolCallFields, kw_only=True):
    tool_kind: ToolPartKind | None = None
    id: str | None = None
    provider_name: str | None = None
    provider_details: dict[str, Any] | None = None

    def args_as_dict(self, *, raise_if_invalid: bool = False) -> dict[str, Any]:
        """The arguments as a dict; unparsable or non-object JSON comes back as
        `{'INVALID_JSON': '<raw>'}`, or raises `ValueError` with `raise_if_invalid`."""
        args = self.args
        if args is None or args == '':
            return {}
        if isinstance(args, dict):
            return args
        try:
            parsed = msgspec.json.decode(args)
        except msgspec.DecodeError as error:
            if raise_if_invalid:
                raise ValueError(f'the arguments of tool call {self.tool_call_id!r} are not valid JSON') from error
            return {'INVALID_JSON': args}
        if isinstance(parsed, dict):
            return parsed
        if raise_if_invalid:
            raise ValueError(f'the arguments of tool call {self.tool_call_id!r} are not a JSON object')
        return {'INVALID_JSON': args}

    @property
    def typed_args(self) -> dict[str, Any] | None:
        """The arguments as a dict, or None while they are not (yet) a JSON object: still
        streaming in, or not valid. Threadline has no typed tool kinds, so this is the dict."""
        try:
            return self.args_as_dict(raise_if_invalid=True)
        except ValueError:
            return None

    def args_as_json_str(self) -> str:
        """The arguments as compact JSON text, with the same rule for unparsable JSON."""
        args = self.args
        if isinstance(args, str) and args:
            try:
                if isinstance(msgspec.json.decode(args), dict):
                    return args
            except msgspec.DecodeError:
                pass
        return msgspec.json.encode(self.args_as_dict()).decode()

    def has_content(self) -> bool:
        """Whether the call carries any arguments."""
        args = self.args
        if isinstance(args, dict):
            return bool(args)
        return bool(args)


class ToolCallPart(_ToolCallBase, kw_only=True, tag='tool-call'):
    """A call the model asked Threadline to run; `args` is a dict or the JSON text the model wrote."""

    part_kind: ClassVar[str] = 'tool-call'


class NativeToolCallPart(_ToolCallBase, kw_only=True, tag='builtin-tool-call'):
    """A call to a tool the provider runs itself (web search, code execution); passed back untouched."""

    part_kind: ClassVar[str] = 'builtin-tool-call'


class _NativeToolReturnFields(_ResponsePart):
    tool_name: str
    content: ToolReturnContent
    tool_call_id: str = msgspec.field(default_factory=_new_tool_call_id)


class NativeToolReturnPart(_NativeToolReturnFields, ToolReturnReading, kw_only=True, tag='builtin-tool-return'):
    """The provider's own result for a `NativeToolCallPart`, inline in its response."""

    tool_kind: ToolPartKind | None = None
    metadata: Any = None
    timestamp: datetime = msgspec.field(default_factory=now_utc)
    outcome: ToolReturnOutcome = 'success'
    provider_name: str | None = None
    provider_details: dict[str, Any] | None = None
    content_file_digests: list[str] | UnsetType = UNSET

    part_kind: ClassVar[str] = 'builtin-tool-return'


class _FileFields(_ResponsePart):
    content: BinaryContent


class FilePart(_FileFields, kw_only=True, tag='file'):
    """A file the model produced (an image, audio)."""

    id: str | None = None
    provider_name: str | None = None
    provider_details: dict[str, Any] | None = None

    part_kind: ClassVar[str] = 'file'

    def has_content(self) -> bool:
        return bool(self.content.data)


# The reference renamed these classes; the wire tags did not change.
BuiltinToolCallPart = NativeToolCallPart
BuiltinToolReturnPart = NativeToolReturnPart
