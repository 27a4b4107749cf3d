"""The exported names are pinned: changing the public surface is a deliberate act."""

from __future__ import annotations

import threadline
import threadline.messages


def test_top_level_exports() -> None:
    assert set(threadline.__all__) >= {
        'ModelMessagesTypeAdapter',
        'ModelMessage',
        'to_json',
        'to_jsonable_python',
        'UserError',
        'MessageValidationError',
        'ThreadlineError',
    }
    for name in threadline.__all__:
        assert getattr(threadline, name) is not None


def test_messages_exports() -> None:
    expected = {
        'ModelRequest',
        'ModelResponse',
        'SystemPromptPart',
        'UserPromptPart',
        'ToolReturnPart',
        'RetryPromptPart',
        'RetryFeedbackPart',
        'TextPart',
        'ThinkingPart',
        'ToolCallPart',
        'BuiltinToolCallPart',
        'BuiltinToolReturnPart',
        'NativeToolCallPart',
        'NativeToolReturnPart',
        'FilePart',
        'CompactionPart',
        'ToolAvailabilityDeltaPart',
        'TextContent',
        'ImageUrl',
        'AudioUrl',
        'DocumentUrl',
        'VideoUrl',
        'BinaryContent',
        'UploadedFile',
        'CachePoint',
        'RequestUsage',
        'RunUsage',
        'ModelMessagesTypeAdapter',
        'OpaquePart',
        'OpaqueContent',
    }
    assert expected <= set(threadline.messages.__all__)
    for name in threadline.messages.__all__:
        assert hasattr(threadline.messages, name), name


def test_message_validation_error_is_a_value_error() -> None:
    assert issubclass(threadline.MessageValidationError, ValueError)
    assert issubclass(threadline.MessageValidationError, threadline.ThreadlineError)
