"""The Vercel AI SDK's `UIMessage` and its parts, as the `ai` package's `useChat` sends and keeps them
(field names in camelCase on the wire, snake_case here)."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator
from pydantic.alias_generators import to_camel

__all__ = [
    'DataUIPart',
    'DynamicToolUIPart',
    'FileUIPart',
    'ReasoningUIPart',
    'SourceDocumentUIPart',
    'SourceUrlUIPart',
    'StepStartUIPart',
    'TextUIPart',
    'ToolUIPart',
    'UIMessage',
    'UIMessagePart',
]

ToolState = Literal[
    'input-streaming',
    'input-available',
    'approval-requested',
    'approval-responded',
    'output-available',
    'output-error',
    'output-denied',
]


class _Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra='allow')


class TextUIPart(_Camel):
    type: Literal['text'] = 'text'
    text: str
    state: Literal['streaming', 'done'] | None = None
    provider_metadata: dict[str, Any] | None = None


class ReasoningUIPart(_Camel):
    type: Literal['reasoning'] = 'reasoning'
    text: str
    state: Literal['streaming', 'done'] | None = None
    provider_metadata: dict[str, Any] | None = None


class SourceUrlUIPart(_Camel):
    type: Literal['source-url'] = 'source-url'
    source_id: str
    url: str
    title: str | None = None
    provider_metadata: dict[str, Any] | None = None


class SourceDocumentUIPart(_Camel):
    type: Literal['source-document'] = 'source-document'
    source_id: str
    media_type: str
    title: str
    filename: str | None = None
    provider_metadata: dict[str, Any] | None = None


class FileUIPart(_Camel):
    type: Literal['file'] = 'file'
    media_type: str
    url: str
    filename: str | None = None
    provider_metadata: dict[str, Any] | None = None

    @field_validator('url')
    @classmethod
    def _readable_data_url(cls, url: str) -> str:
        """A `data:` URL must hold what it says: base64 that decodes (a browser never sends
        anything else), so a bad one is a validation error here, not an error deep in a run."""
        if url.startswith('data:'):
            header, comma, data = url.partition(',')
            if not comma:
                raise ValueError('a data: URL needs a comma before its data')
            if header.endswith(';base64'):
                try:
                    base64.b64decode(data, validate=True)
                except binascii.Error:
                    raise ValueError('the data: URL does not hold valid base64') from None
        return url


class StepStartUIPart(_Camel):
    type: Literal['step-start'] = 'step-start'


class DataUIPart(_Camel):
    type: Annotated[str, Field(pattern=r'^data-')]
    id: str | None = None
    data: Any = None


class ToolUIPart(_Camel):
    """A call of a tool named in the type (`tool-<name>`), in one of the states of its life."""

    type: Annotated[str, Field(pattern=r'^tool-')]
    tool_call_id: str
    state: ToolState
    input: Any = None
    output: Any = None
    error_text: str | None = None
    raw_input: Any = None
    title: str | None = None
    provider_executed: bool | None = None
    call_provider_metadata: dict[str, Any] | None = None
    preliminary: bool | None = None
    approval: dict[str, Any] | None = None

    @property
    def tool_name(self) -> str:
        return self.type.removeprefix('tool-')


class DynamicToolUIPart(ToolUIPart):
    """A call of a tool not known to the client's types (`dynamic-tool`, with `toolName`)."""

    type: Literal['dynamic-tool'] = 'dynamic-tool'
    tool_name_: str = Field(alias='toolName')

    @property
    def tool_name(self) -> str:
        return self.tool_name_


def _kind(value: object) -> str | None:
    """The part's tag; None (no tag: a validation error naming the part) when `type` is not text."""
    kind = value.get('type', '') if isinstance(value, dict) else getattr(value, 'type', '')
    if not isinstance(kind, str):
        return None
    if kind.startswith('tool-'):
        return 'tool'
    if kind.startswith('data-'):
        return 'data'
    return str(kind)


UIMessagePart = Annotated[
    Annotated[TextUIPart, Tag('text')]
    | Annotated[ReasoningUIPart, Tag('reasoning')]
    | Annotated[SourceUrlUIPart, Tag('source-url')]
    | Annotated[SourceDocumentUIPart, Tag('source-document')]
    | Annotated[FileUIPart, Tag('file')]
    | Annotated[StepStartUIPart, Tag('step-start')]
    | Annotated[DynamicToolUIPart, Tag('dynamic-tool')]
    | Annotated[ToolUIPart, Tag('tool')]
    | Annotated[DataUIPart, Tag('data')],
    Discriminator(_kind),
]


class UIMessage(_Camel):
    """One message of a chat UI: an id, a role, its parts, and metadata the client controls."""

    id: str
    role: Literal['system', 'user', 'assistant']
    parts: list[UIMessagePart]
    metadata: Any = None
