"""Sanitizing a history that came from an untrusted client before an agent runs over it.

A client can write anything into a history it submits. `sanitize_messages` strips what would
give that history authority or reach it was never given. Rules, in the order applied:

1. with `strip_compaction_parts=True`, every `CompactionPart` is dropped (by default a client's
   compaction summary is kept, but the marker that would let it stand in for the system prompt is
   removed, so it never does);
2. in requests: system-voice parts (`SystemPromptPart`, instruction delta/baseline parts) are
   dropped unless `strip_system_prompts=False`, and "no output" feedback (which renders in the
   system voice) is demoted to user text; file URLs whose scheme is not in
   `allowed_file_url_schemes` are dropped (relative URLs are kept), `force_download` is reset to
   False unless its value is allow-listed, uploaded-file references are dropped unless
   `allow_uploaded_files=True` (in user content and, recursively, in tool results), and
   `TextContent.metadata` is cleared; `instructions` are cleared unless `strip_instructions=False`;
3. in responses: the same file rules in built-in tool results, `workspace_ref` cleared unless
   `strip_workspace_refs=False`;
4. everywhere: the framework's `__pydantic_ai__` metadata namespace is removed; a message left
   with no parts is dropped;
5. at the tail: while the history ends in a response, its tool calls whose ids are not in
   `resolved_tool_call_ids` are removed (a client must not be able to make the server run a call
   the model never made); a response left empty is dropped and the one before it is checked.

Each kind of stripping warns once per call, naming what was stripped and the option that keeps
it. Nothing is repaired or merged here; the run's repair does that. The input is never mutated;
messages no rule touches are returned as they are (messages are values: edit them with `replace`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar
from urllib.parse import urlsplit

import msgspec

from threadline.messages._content import FileUrl, TextContent, UploadedFile, UserContent
from threadline.messages._messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
)
from threadline.messages._opaque import OpaquePart
from threadline.messages._parts import (
    CompactionPart,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.messages._repair import _check
from threadline.messages.framing import fenced_feedback

__all__ = ['SanitizeOptions', 'StrippedItem', 'sanitize_messages', 'sanitize_report']

_FRAMEWORK_KEY = '__pydantic_ai__'
_PLANTED_KEY = 'pydantic_ai_standing_prompt_planted'
_SYSTEM_VOICE_KINDS = frozenset({'instruction-delta', 'instruction-baseline'})
# Kinds whose detail is the client's own text (a URL scheme can carry anything): warned as a count.
_COUNTED = frozenset({'file_url_scheme'})
_WARNINGS = {
    'system_prompt': 'Parts carrying the system voice were stripped from client-supplied history; pass '
    'strip_system_prompts=False if they were written by trusted server code.',
    'file_url_scheme': 'File URLs with schemes not in allowed_file_url_schemes were dropped: {detail}. Add the '
    'scheme to allowed_file_url_schemes to keep them.',
    'force_download': 'force_download was reset to False on client-supplied file URLs; add the value to '
    'allowed_file_url_force_download to keep it.',
    'uploaded_file': 'Uploaded file references were dropped from client-supplied history; pass '
    'allow_uploaded_files=True to keep them.',
    'text_content_metadata': 'TextContent.metadata was cleared in client-supplied history (application-only '
    'data must come from the server).',
    'framework_metadata': 'Framework metadata (__pydantic_ai__) was removed from client-supplied history.',
    'compaction_part': 'Compaction parts were dropped from client-supplied history (strip_compaction_parts=True).',
    'unresolved_tool_call': 'Client-submitted history ended with unresolved tool call(s) {detail}; they were '
    'removed. Pass their ids in resolved_tool_call_ids if the server resolves them.',
}


@dataclass(frozen=True)
class StrippedItem:
    """One thing sanitizing removed or changed: what kind, at which message and part (input positions)."""

    kind: str
    message_index: int
    part_index: int | None = None
    detail: str | None = None


@dataclass
class _Options:
    strip_system_prompts: bool
    strip_instructions: bool
    strip_compaction_parts: bool
    schemes: frozenset[str]
    force_download: tuple[object, ...]
    allow_uploaded_files: bool
    strip_workspace_refs: bool
    resolved: frozenset[str]


class _Sanitizer:
    def __init__(self, options: _Options) -> None:
        self.options = options
        self.stripped: list[StrippedItem] = []

    def note(self, kind: str, i: int, j: int | None = None, detail: str | None = None) -> None:
        self.stripped.append(StrippedItem(kind, i, j, detail))

    def file_item(self, item: _ItemT, i: int, j: int) -> _ItemT | None:
        """The item as it may stay, or None when it must be dropped."""
        if isinstance(item, UploadedFile) and not self.options.allow_uploaded_files:
            self.note('uploaded_file', i, j)
            return None
        if isinstance(item, FileUrl):
            try:
                scheme = urlsplit(item.url).scheme.lower()
            except ValueError:
                scheme = '?'
            if scheme and scheme not in self.options.schemes:
                self.note('file_url_scheme', i, j, scheme)
                return None
            if item.force_download is not False and item.force_download not in self.options.force_download:
                self.note('force_download', i, j)
                return msgspec.structs.replace(item, force_download=False)
        return item

    def walk(self, value: Any, i: int, j: int) -> Any:
        """Tool result content with the file rules applied at any depth (`_DROP` for a removed item)."""
        if isinstance(value, (FileUrl, UploadedFile)):
            kept = self.file_item(value, i, j)
            return _DROP if kept is None else kept
        if isinstance(value, list):
            return [v for v in (self.walk(item, i, j) for item in value) if v is not _DROP]
        if isinstance(value, tuple):
            return tuple(v for v in (self.walk(item, i, j) for item in value) if v is not _DROP)
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                walked = self.walk(item, i, j)
                if walked is not _DROP:
                    out[key] = walked
            return out
        return value

    def metadata(self, metadata: Any, i: int) -> Any:
        if isinstance(metadata, dict) and _FRAMEWORK_KEY in metadata:
            self.note('framework_metadata', i)
            rest = {k: v for k, v in metadata.items() if k != _FRAMEWORK_KEY}
            return rest or None
        return metadata

    def request_part(self, part: ModelRequestPart, i: int, j: int) -> ModelRequestPart | None:
        options = self.options
        if options.strip_system_prompts:
            if isinstance(part, SystemPromptPart) or (
                isinstance(part, OpaquePart) and part.part_kind in _SYSTEM_VOICE_KINDS
            ):
                self.note('system_prompt', i, j)
                return None
            if isinstance(part, RetryFeedbackPart) and part.retry.cause == 'no_output':
                # Client-supplied: never the framework's voice, whatever its text says.
                return UserPromptPart(fenced_feedback(part.content, 'model_retry'), timestamp=part.timestamp)
        if isinstance(part, UserPromptPart) and not isinstance(part.content, str):
            return msgspec.structs.replace(part, content=self.user_content(part.content, i, j))
        if isinstance(part, ToolReturnPart) and isinstance(part.content, (list, tuple, dict, FileUrl, UploadedFile)):
            content = self.walk(part.content, i, j)
            return msgspec.structs.replace(part, content=None if content is _DROP else content)
        if isinstance(part, CompactionPart):
            return self.compaction(part)
        return part

    def user_content(self, items: Sequence[UserContent], i: int, j: int) -> list[UserContent]:
        out: list[UserContent] = []
        for item in items:
            if isinstance(item, TextContent) and item.metadata is not None:
                self.note('text_content_metadata', i, j)
                item = msgspec.structs.replace(item, metadata=None)
            kept = self.file_item(item, i, j)
            if kept is not None:
                out.append(kept)
        return out

    def compaction(self, part: CompactionPart) -> CompactionPart:
        details = part.provider_details
        if isinstance(details, dict) and _PLANTED_KEY in details:
            rest = {k: v for k, v in details.items() if k != _PLANTED_KEY}
            return msgspec.structs.replace(part, provider_details=rest or None)
        return part

    def response_part(self, part: ModelResponsePart, i: int, j: int) -> ModelResponsePart | None:
        if isinstance(part, NativeToolReturnPart) and isinstance(
            part.content, (list, tuple, dict, FileUrl, UploadedFile)
        ):
            content = self.walk(part.content, i, j)
            return msgspec.structs.replace(part, content=None if content is _DROP else content)
        if isinstance(part, CompactionPart):
            return self.compaction(part)
        return part

    def parts(
        self, parts: Sequence[_PartT], i: int, handle: Callable[[_PartT, int, int], _PartT | None]
    ) -> list[_PartT] | None:
        """The kept parts, or None when every part stays as it is (the common case: no copy)."""
        kept_parts: list[_PartT] | None = None
        for j, part in enumerate(parts):
            part_t = type(part)
            kept: _PartT | None
            if part_t in _PLAIN_PARTS or (part_t in _STR_CONTENT_PARTS and type(part.content) is str):  # type: ignore[union-attr]
                kept = part
            elif self.options.strip_compaction_parts and part_t is CompactionPart:
                self.note('compaction_part', i, j)
                kept = None
            else:
                kept = handle(part, i, j)
            if kept is not part and kept_parts is None:
                kept_parts = list(parts[:j])
            if kept_parts is not None and kept is not None:
                kept_parts.append(kept)
        return kept_parts

    def message(self, message: ModelMessage, i: int) -> ModelMessage | None:
        """The sanitized message (the same object when nothing changes), or None to drop it."""
        options = self.options
        parts: list[ModelRequestPart] | list[ModelResponsePart] | None
        if isinstance(message, ModelRequest):
            parts = self.parts(message.parts, i, self.request_part)
        else:
            parts = self.parts(message.parts, i, self.response_part)
        changes: dict[str, Any] = {}
        if parts is not None:
            if not parts:
                return None
            changes['parts'] = parts
        elif not message.parts:
            return None
        if message.metadata is not None:
            metadata = self.metadata(message.metadata, i)
            if metadata is not message.metadata:
                changes['metadata'] = metadata
        if isinstance(message, ModelRequest):
            if options.strip_instructions and message.instructions is not None:
                changes['instructions'] = None
        elif options.strip_workspace_refs and message.workspace_ref is not None:
            changes['workspace_ref'] = None
        return msgspec.structs.replace(message, **changes) if changes else message

    def strip_unresolved_tail(self, out: list[tuple[int, ModelMessage]]) -> None:
        while out and isinstance(out[-1][1], ModelResponse):
            i, response = out[-1]
            removed = [
                p.tool_call_id
                for p in response.parts
                if isinstance(p, ToolCallPart) and p.tool_call_id not in self.options.resolved
            ]
            if not removed:
                return
            self.note('unresolved_tool_call', i, None, ', '.join(repr(r) for r in removed))
            kept = [p for p in response.parts if not (isinstance(p, ToolCallPart) and p.tool_call_id in removed)]
            if kept:
                out[-1] = (i, msgspec.structs.replace(response, parts=kept))
                return
            out.pop()


_DROP = object()
_ItemT = TypeVar('_ItemT')
_PartT = TypeVar('_PartT', ModelRequestPart, ModelResponsePart)
# Parts no rule ever touches, and parts untouched while their content is plain text.
_PLAIN_PARTS = frozenset({TextPart, ThinkingPart, ToolCallPart, NativeToolCallPart, RetryPromptPart})
_STR_CONTENT_PARTS = frozenset({UserPromptPart, ToolReturnPart, NativeToolReturnPart})


class SanitizeOptions(TypedDict, total=False):
    """The keyword options of `sanitize_messages`, for functions that pass them on."""

    strip_system_prompts: bool
    strip_instructions: bool
    strip_compaction_parts: bool
    allowed_file_url_schemes: Iterable[str]
    allowed_file_url_force_download: Iterable[object]
    allow_uploaded_files: bool
    strip_workspace_refs: bool
    resolved_tool_call_ids: Iterable[str]


def sanitize_report(
    messages: Sequence[ModelMessage],
    *,
    strip_system_prompts: bool = True,
    strip_instructions: bool = True,
    strip_compaction_parts: bool = False,
    allowed_file_url_schemes: Iterable[str] = ('http', 'https'),
    allowed_file_url_force_download: Iterable[object] = (),
    allow_uploaded_files: bool = False,
    strip_workspace_refs: bool = True,
    resolved_tool_call_ids: Iterable[str] = (),
) -> tuple[list[ModelMessage], list[StrippedItem]]:
    """The sanitized history and the list of what was stripped, without warning (for the audit)."""
    _check(messages)
    sanitizer = _Sanitizer(
        _Options(
            strip_system_prompts,
            strip_instructions,
            strip_compaction_parts,
            frozenset(s.lower() for s in allowed_file_url_schemes),
            tuple(allowed_file_url_force_download),
            allow_uploaded_files,
            strip_workspace_refs,
            frozenset(resolved_tool_call_ids),
        )
    )
    out: list[tuple[int, ModelMessage]] = []
    for i, message in enumerate(messages):
        kept = sanitizer.message(message, i)
        if kept is not None:
            out.append((i, kept))
    sanitizer.strip_unresolved_tail(out)
    return [message for _, message in out], sanitizer.stripped


def sanitize_messages(
    messages: Sequence[ModelMessage],
    *,
    strip_system_prompts: bool = True,
    strip_instructions: bool = True,
    strip_compaction_parts: bool = False,
    allowed_file_url_schemes: Iterable[str] = ('http', 'https'),
    allowed_file_url_force_download: Iterable[object] = (),
    allow_uploaded_files: bool = False,
    strip_workspace_refs: bool = True,
    resolved_tool_call_ids: Iterable[str] = (),
) -> list[ModelMessage]:
    """A copy of an untrusted history that is safe to run over (rules in the module docstring)."""
    sanitized, stripped = sanitize_report(
        messages,
        strip_system_prompts=strip_system_prompts,
        strip_instructions=strip_instructions,
        strip_compaction_parts=strip_compaction_parts,
        allowed_file_url_schemes=allowed_file_url_schemes,
        allowed_file_url_force_download=allowed_file_url_force_download,
        allow_uploaded_files=allow_uploaded_files,
        strip_workspace_refs=strip_workspace_refs,
        resolved_tool_call_ids=resolved_tool_call_ids,
    )
    by_kind: dict[str, list[str]] = {}
    for item in stripped:
        details = by_kind.setdefault(item.kind, [])
        if item.kind in _COUNTED:
            details.append('')
        elif item.detail and item.detail not in details:
            details.append(item.detail)
    for kind, details in by_kind.items():
        detail = f'{len(details)} of them' if kind in _COUNTED else ', '.join(details)
        warnings.warn(_WARNINGS[kind].format(detail=detail), UserWarning, stacklevel=2)
    return sanitized
