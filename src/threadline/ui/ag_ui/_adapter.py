"""`AGUIAdapter`: Threadline histories to and from AG-UI messages (the `ag-ui-protocol` package's
types, extra `ui`).

`load_messages` (client → history):
- `user` → `UserPromptPart` (text, and images/documents/audio/video given by URL or inline data);
  `system` and `developer` → `SystemPromptPart`;
- `assistant` → a `ModelResponse` with its text and `tool_calls` (arguments kept as sent), a
  `reasoning` message before it → a `ThinkingPart` in that response;
- `tool` → the `ToolReturnPart` of its call (its `error` as a failed result), collected into the
  request after the response;
- dropped: message ids and `metadata`, `encrypted_value`, `name`, activity messages.
- Sanitized by default (client system prompts, unsafe file URLs, a trailing unanswered call);
  `load_messages_report` also returns what was stripped, content-free, for the audit log. The
  system prompt is the server's: run over a client-held history with `ReinjectSystemPrompt()`
  and the agent's own leads the next request.

`dump_messages` (history → client): system, user (its text; files are not sent back), reasoning,
assistant (text joined, calls with JSON arguments) and tool messages, in order. Dropped: run and conversation ids, timestamps,
usage, model and provider names and details, signatures, part ids, files the model produced, and
retry prompts that answer no call: store Threadline's history, not this form.
"""

from __future__ import annotations

import functools
import itertools
import json
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from pydantic import TypeAdapter

from threadline.messages import (
    AudioUrl,
    BinaryContent,
    DocumentUrl,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    RetryPromptPart,
    StrippedItem,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    VideoUrl,
    sanitize_report,
)
from threadline.messages.wire import Base64Bytes, enc_hook
from threadline.ui._input import loaded

if TYPE_CHECKING:
    from ag_ui.core import AssistantMessage, InputContent, Message  # the extra `ui`, loaded on first use

__all__ = ['AGUIAdapter']


@functools.cache  # building the adapter costs about 1 ms: once per process, not per request
def _message_adapter() -> TypeAdapter[list[Message]]:
    from ag_ui.core import Message

    return TypeAdapter(list[Message])


class AGUIAdapter:
    """Converts between Threadline histories and AG-UI messages (rules in the module docstring)."""

    @classmethod
    def load_messages(cls, messages: Sequence[Any], *, sanitize: bool = True) -> list[ModelMessage]:
        """The history a client's messages stand for, sanitized unless `sanitize=False`."""
        return cls.load_messages_report(messages, sanitize=sanitize)[0]

    @classmethod
    def load_messages_report(
        cls, messages: Sequence[Any], *, sanitize: bool = True
    ) -> tuple[list[ModelMessage], list[StrippedItem]]:
        """`load_messages`, and what sanitizing stripped (content-free, for the audit log). Raises
        `pydantic.ValidationError`, and only that, for messages it cannot load (`ui._input`)."""
        raw = [m.model_dump(by_alias=True) if hasattr(m, 'model_dump') else m for m in messages]

        def load() -> tuple[list[ModelMessage], list[StrippedItem]]:
            history = _Loader().load(_message_adapter().validate_python(raw))
            return sanitize_report(history) if sanitize else (history, [])

        return loaded('AG-UI messages', raw, load)

    @classmethod
    def dump_messages(
        cls, messages: Sequence[ModelMessage], *, generate_message_id: Callable[[], str] | None = None
    ) -> list[Message]:
        """The AG-UI messages a client shows for a history."""
        from ag_ui.core import (
            AssistantMessage,
            FunctionCall,
            ReasoningMessage,
            SystemMessage,
            ToolCall,
            ToolMessage,
            UserMessage,
        )

        new_id = generate_message_id or _message_ids()
        out: list[Message] = []
        for message in messages:
            if isinstance(message, ModelResponse):
                thinking = [p.content for p in message.parts if isinstance(p, ThinkingPart) and p.content]
                if thinking:
                    out.append(ReasoningMessage(id=new_id(), role='reasoning', content='\n\n'.join(thinking)))
                texts = [p.content for p in message.parts if isinstance(p, TextPart)]
                calls = [
                    ToolCall(
                        id=p.tool_call_id,
                        type='function',
                        function=FunctionCall(name=p.tool_name, arguments=p.args_as_json_str()),
                    )
                    for p in message.parts
                    if isinstance(p, ToolCallPart)
                ]
                if texts or calls:
                    out.append(
                        AssistantMessage(
                            id=new_id(), role='assistant', content='\n\n'.join(texts) or None, tool_calls=calls or None
                        )
                    )
                continue
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    out.append(SystemMessage(id=new_id(), role='system', content=part.content))
                elif isinstance(part, UserPromptPart):
                    out.append(UserMessage(id=new_id(), role='user', content=_dump_user(part)))
                elif isinstance(part, ToolReturnPart):
                    failed = part.outcome in ('failed', 'retried', 'denied')
                    text = _text(part.content)
                    out.append(
                        ToolMessage(
                            id=new_id(),
                            role='tool',
                            tool_call_id=part.tool_call_id,
                            content=text,
                            error=text if failed else None,
                        )
                    )
                elif isinstance(part, RetryPromptPart) and part.tool_name:
                    text = _text(part.content)
                    out.append(
                        ToolMessage(id=new_id(), role='tool', tool_call_id=part.tool_call_id, content=text, error=text)
                    )
        return out


class _Loader:
    """One pass over AG-UI messages, building responses and the requests between them."""

    def __init__(self) -> None:
        self.out: list[ModelMessage] = []
        self.thinking: list[str] = []
        self.names: dict[str, str] = {}

    def load(self, messages: list[Message]) -> list[ModelMessage]:
        from ag_ui.core import (
            AssistantMessage,
            DeveloperMessage,
            ReasoningMessage,
            SystemMessage,
            ToolMessage,
            UserMessage,
        )

        for message in messages:  # each is the class its `role` names (the adapter validated them)
            if isinstance(message, UserMessage):
                self._request(UserPromptPart(_user_content(message.content)))
            elif isinstance(message, (SystemMessage, DeveloperMessage)):
                self._request(SystemPromptPart(message.content))
            elif isinstance(message, ReasoningMessage):
                self.thinking.append(message.content)
            elif isinstance(message, AssistantMessage):
                self._response(message)
            elif isinstance(message, ToolMessage):
                name = self.names.get(message.tool_call_id, 'unknown_tool')
                if message.error:
                    self._request(ToolReturnPart(name, message.error, message.tool_call_id, outcome='failed'))
                else:
                    self._request(ToolReturnPart(name, _maybe_json(message.content), message.tool_call_id))
        return self.out

    def _request(self, part: ModelRequestPart) -> None:
        if self.out and isinstance(self.out[-1], ModelRequest):
            self.out[-1] = ModelRequest(parts=[*self.out[-1].parts, part])
        else:
            self.out.append(ModelRequest(parts=[part]))

    def _response(self, message: AssistantMessage) -> None:
        parts: list[ModelResponsePart] = [ThinkingPart(t) for t in self.thinking]
        self.thinking = []
        if message.content:
            parts.append(TextPart(message.content))
        for call in message.tool_calls or []:
            self.names[call.id] = call.function.name
            parts.append(ToolCallPart(call.function.name, call.function.arguments, call.id))
        if self.out and isinstance(self.out[-1], ModelResponse):
            self.out[-1] = ModelResponse(parts=[*self.out[-1].parts, *parts])
        elif parts:
            self.out.append(ModelResponse(parts=parts))


def _message_ids() -> Callable[[], str]:
    """Fresh message ids in UUIDv4 form: one random UUID, then each id flips its low bits by a
    counter, so a thousand messages cost one `uuid4()` instead of a thousand (the version and
    variant bits are untouched; ids of one dump are distinct, another dump's start elsewhere)."""
    base, count = uuid.uuid4().int, itertools.count()

    def new_id() -> str:
        h = f'{base ^ next(count):032x}'
        return f'{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}'

    return new_id


def _text(value: object) -> str:
    """A tool result as the text of a tool message: text as is, anything else as JSON."""
    if isinstance(value, str):
        return value

    return msgspec.json.encode(value, enc_hook=enc_hook).decode()


def _maybe_json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, (dict, list)) else text


def _user_content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    items: list[Any] = []
    for part in content:
        kind = getattr(part, 'type', None)
        if kind == 'text':
            items.append(part.text)
            continue
        source = getattr(part, 'source', None)
        media_type = (
            getattr(source, 'mime_type', None) or getattr(part, 'mime_type', None) or 'application/octet-stream'
        )
        if source is not None and getattr(source, 'type', None) == 'data':
            items.append(BinaryContent(Base64Bytes.decode_text(source.value), media_type=media_type))
        elif source is not None and getattr(source, 'type', None) == 'url':
            cls = {'image': ImageUrl, 'audio': AudioUrl, 'video': VideoUrl}.get(str(kind), DocumentUrl)
            items.append(cls(source.value, media_type=media_type))
    return items[0] if len(items) == 1 and isinstance(items[0], str) else items


def _dump_user(part: UserPromptPart) -> str | list[InputContent]:
    if isinstance(part.content, str):
        return part.content
    from ag_ui.core import TextInputContent

    texts = [i if isinstance(i, str) else i.content for i in part.content if isinstance(i, (str, TextContent))]
    return [TextInputContent(type='text', text=t) for t in texts]
