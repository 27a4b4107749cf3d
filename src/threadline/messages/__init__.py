"""The message model: messages, parts, user content, usage, and their JSON form.

Messages are plain values (`msgspec.Struct`s that also behave as dataclasses): edit them with
`dataclasses.replace`, compare them by value, and store them with `ModelMessagesTypeAdapter`,
whose JSON is the one pydantic-ai writes, so a history written by either loads in the other.
"""

from __future__ import annotations

import msgspec as _msgspec

from ._adapter import ModelMessagesTypeAdapter, to_json, to_jsonable_python
from ._base import install_dataclass_shim as _install_dataclass_shim
from ._content import (
    AudioUrl,
    BinaryContent,
    CachePoint,
    DocumentUrl,
    FileUrl,
    ForceDownloadMode,
    ImageUrl,
    MultiModalContent,
    TextContent,
    UploadedFile,
    UploadedFileProviderName,
    UserContent,
    VideoUrl,
)
from ._messages import (
    FinishReason,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelRequestState,
    ModelResponse,
    ModelResponsePart,
    ModelResponseState,
)
from ._opaque import OpaqueContent, OpaquePart
from ._parts import (
    BuiltinToolCallPart,
    BuiltinToolReturnPart,
    CompactionPart,
    FilePart,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryInfo,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolAvailabilityDeltaPart,
    ToolCallPart,
    ToolReturnContent,
    ToolReturnOutcome,
    ToolReturnPart,
    UserPromptPart,
)
from ._usage import RequestUsage, RunUsage

__all__ = [
    'AudioUrl',
    'BinaryContent',
    'BuiltinToolCallPart',
    'BuiltinToolReturnPart',
    'CachePoint',
    'CompactionPart',
    'DocumentUrl',
    'FilePart',
    'FileUrl',
    'FinishReason',
    'ForceDownloadMode',
    'ImageUrl',
    'ModelMessage',
    'ModelMessagesTypeAdapter',
    'ModelRequest',
    'ModelRequestPart',
    'ModelRequestState',
    'ModelResponse',
    'ModelResponsePart',
    'ModelResponseState',
    'MultiModalContent',
    'NativeToolCallPart',
    'NativeToolReturnPart',
    'OpaqueContent',
    'OpaquePart',
    'RequestUsage',
    'RetryFeedbackPart',
    'RetryInfo',
    'RetryPromptPart',
    'RunUsage',
    'SystemPromptPart',
    'TextContent',
    'TextPart',
    'ThinkingPart',
    'ToolAvailabilityDeltaPart',
    'ToolCallPart',
    'ToolReturnContent',
    'ToolReturnOutcome',
    'ToolReturnPart',
    'UploadedFile',
    'UploadedFileProviderName',
    'UserContent',
    'UserPromptPart',
    'VideoUrl',
    'to_json',
    'to_jsonable_python',
]


def _concrete_structs() -> list[type]:
    found: list[type] = []
    for name in __all__:
        value = globals()[name]
        if isinstance(value, type) and issubclass(value, _msgspec.Struct) and value not in found:
            found.append(value)
    return found


for _cls in _concrete_structs():
    _install_dataclass_shim(_cls)
del _cls
