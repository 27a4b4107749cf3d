"""`VercelAIAdapter`: Threadline histories to and from the Vercel AI SDK's `UIMessage` list.

`load_messages` (browser → history):
- a user message becomes a `UserPromptPart` (one text part as a string; files as URLs by media
  type, or as bytes when they come as a `data:` URL); a system message a `SystemPromptPart`;
- an assistant message becomes one `ModelResponse` per step (`step-start` parts, or a tool's
  output, end a step): text, reasoning (`ThinkingPart`), tool calls; a tool part whose output
  is known also gives the `ToolReturnPart` in the request after the step (`output-error` as a
  failed result, `output-denied` as a denied one); a provider-executed tool becomes a native
  tool call and return;
- dropped: `data-*` and source parts, `UIMessage.metadata`, part `providerMetadata`, message ids.
- By default the result is sanitized (`threadline.messages.sanitize_messages`: client system
  prompts, non-http(s) file URLs, uploaded files and a trailing unanswered call are removed), as a
  history a browser sent is untrusted; `load_messages_report` also returns what was stripped, as
  content-free `StrippedItem`s for the audit log. The system prompt is the server's: run over a
  client-held history with `ReinjectSystemPrompt()` and the agent's own leads the next request.

`dump_messages` (history → browser): each user turn a user message, each run of responses and tool
results between user turns one assistant message with `step-start` between steps, a tool call and
its result one tool part (`output-available`, `output-error` for a failed or retried result,
`output-denied`). Dropped: run and conversation ids, timestamps, usage, model and provider names,
provider details and signatures, ids of parts, retry prompts that answer no tool call. These are
exactly what the next model request may need, so store Threadline's history, not this form.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import TypeAdapter

from threadline.messages import (
    AudioUrl,
    BinaryContent,
    DocumentUrl,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryPromptPart,
    StrippedItem,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
    VideoUrl,
    sanitize_report,
)
from threadline.messages.wire import Base64Bytes
from threadline.ui._input import loaded
from threadline.ui.vercel_ai.request_types import (
    FileUIPart,
    ReasoningUIPart,
    StepStartUIPart,
    TextUIPart,
    ToolUIPart,
    UIMessage,
    UIMessagePart,
)

__all__ = ['VercelAIAdapter']

_MESSAGES: TypeAdapter[list[UIMessage]] = TypeAdapter(list[UIMessage])


class VercelAIAdapter:
    """Converts between Threadline histories and Vercel AI `UIMessage` lists (rules in the module
    docstring); usable without a request or a server."""

    @classmethod
    def load_messages(
        cls, messages: Sequence[UIMessage | dict[str, Any]], *, sanitize: bool = True
    ) -> list[ModelMessage]:
        """The history a browser's messages stand for, sanitized unless `sanitize=False` (only for
        a list that did not come from a client)."""
        history, _ = cls.load_messages_report(messages, sanitize=sanitize)
        return history

    @classmethod
    def load_messages_report(
        cls, messages: Sequence[UIMessage | dict[str, Any]], *, sanitize: bool = True
    ) -> tuple[list[ModelMessage], list[StrippedItem]]:
        """`load_messages`, and what sanitizing stripped (content-free, for the audit log). Raises
        `pydantic.ValidationError`, and only that, for messages it cannot load (`ui._input`)."""
        raw = [m.model_dump(by_alias=True) if isinstance(m, UIMessage) else m for m in messages]
        return loaded('UIMessage list', raw, lambda: cls._load(raw, sanitize))

    @classmethod
    def _load(cls, raw: list[Any], sanitize: bool) -> tuple[list[ModelMessage], list[StrippedItem]]:
        parsed = _MESSAGES.validate_python(raw)
        history: list[ModelMessage] = []
        for message in parsed:
            if message.role == 'assistant':
                history.extend(_load_assistant(message.parts))
            elif message.role == 'system':
                texts = [p.text for p in message.parts if isinstance(p, TextUIPart)]
                history.append(ModelRequest(parts=[SystemPromptPart(t) for t in texts]))
            else:
                history.append(ModelRequest(parts=[UserPromptPart(_user_content(message.parts))]))
        history = _merge_requests(history)
        if not sanitize:
            return history, []
        return sanitize_report(history)

    @classmethod
    def dump_messages(
        cls, messages: Sequence[ModelMessage], *, generate_message_id: Callable[[], str] | None = None
    ) -> list[UIMessage]:
        """The `UIMessage` list a browser shows for a history."""
        new_id = generate_message_id or (lambda: str(uuid.uuid4()))
        out: list[UIMessage] = []
        tools: dict[str, ToolUIPart] = {}
        for message in messages:
            if isinstance(message, ModelResponse):
                assistant = out[-1] if out and out[-1].role == 'assistant' else None
                if assistant is None:
                    assistant = UIMessage(id=new_id(), role='assistant', parts=[])
                    out.append(assistant)
                assistant.parts.append(StepStartUIPart())
                assistant.parts.extend(_dump_response(message, tools))
                continue
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    out.append(UIMessage(id=new_id(), role='system', parts=[TextUIPart(text=part.content)]))
                elif isinstance(part, UserPromptPart):
                    out.append(UIMessage(id=new_id(), role='user', parts=_dump_user(part)))
                elif isinstance(part, (ToolReturnPart, RetryPromptPart)):
                    _answer(tools, part)
        return out


# -- browser → history ------------------------------------------------------------------------------
def _user_content(parts: Sequence[UIMessagePart]) -> str | list[UserContent]:
    items: list[UserContent] = []
    for part in parts:
        if isinstance(part, TextUIPart):
            items.append(part.text)
        elif isinstance(part, FileUIPart):
            items.append(_file(part))
    if len(items) == 1 and isinstance(items[0], str):
        return items[0]
    return items


_URL_KINDS: dict[str, type[ImageUrl | AudioUrl | VideoUrl | DocumentUrl]] = {
    'image': ImageUrl,
    'audio': AudioUrl,
    'video': VideoUrl,
}


def _file(part: FileUIPart) -> BinaryContent | ImageUrl | AudioUrl | VideoUrl | DocumentUrl:
    if part.url.startswith('data:'):
        header, _, data = part.url.partition(',')
        raw = base64.b64decode(data) if header.endswith(';base64') else data.encode()
        return BinaryContent(Base64Bytes(raw), media_type=part.media_type)
    kind = part.media_type.split('/', 1)[0]
    cls: type[ImageUrl | AudioUrl | VideoUrl | DocumentUrl] = _URL_KINDS.get(kind, DocumentUrl)
    return cls(part.url, media_type=part.media_type)


def _load_assistant(parts: Sequence[UIMessagePart]) -> list[ModelMessage]:
    out: list[ModelMessage] = []
    response: list[Any] = []
    results: list[Any] = []

    def flush() -> None:
        if response:
            out.append(ModelResponse(parts=list(response)))
        if results:
            out.append(ModelRequest(parts=list(results)))
        response.clear()
        results.clear()

    for part in parts:
        if isinstance(part, StepStartUIPart):
            flush()
            continue
        if results and isinstance(part, (TextUIPart, ReasoningUIPart)):
            flush()  # text after the tools' output is the next step's (calls of one step sit together)
        if isinstance(part, TextUIPart):
            response.append(TextPart(part.text))
        elif isinstance(part, ReasoningUIPart):
            response.append(ThinkingPart(part.text))
        elif isinstance(part, ToolUIPart):
            _load_tool(part, response, results)
    flush()
    return out


_RAW_ARGS = 'threadline'


def _raw_args(args: object) -> dict[str, Any] | None:
    """Arguments the model sent as JSON text, kept beside the parsed `input` (as provider
    metadata) so that loading the part back gives the same text, and the next request the same bytes."""
    return {_RAW_ARGS: {'args': args}} if isinstance(args, str) else None


def _args_of(part: ToolUIPart) -> Any:
    """The call's arguments: the JSON text they were sent as, when the part kept it and its
    `input` still says the same; else the `input` the client sent."""
    args = part.input if isinstance(part.input, (dict, str)) else ({} if part.input is None else part.raw_input)
    ours = (part.call_provider_metadata or {}).get(_RAW_ARGS)
    kept = ours.get('args') if isinstance(ours, dict) else None
    if isinstance(kept, str):
        try:
            if json.loads(kept) == args:
                return kept
        except ValueError:
            pass  # not JSON after all: the input wins
    return args


def _load_tool(part: ToolUIPart, response: list[Any], results: list[Any]) -> None:
    name = part.tool_name
    args = _args_of(part)
    if part.provider_executed:
        response.append(NativeToolCallPart(name, args, part.tool_call_id))
        if part.state == 'output-available':
            response.append(NativeToolReturnPart(name, part.output, part.tool_call_id))
        return
    response.append(ToolCallPart(name, args, part.tool_call_id))
    if part.state == 'output-available':
        results.append(ToolReturnPart(name, part.output, part.tool_call_id))
    elif part.state == 'output-error':
        results.append(ToolReturnPart(name, part.error_text or 'The tool failed.', part.tool_call_id, outcome='failed'))
    elif part.state == 'output-denied':
        results.append(ToolReturnPart(name, 'The tool call was denied.', part.tool_call_id, outcome='denied'))


def _merge_requests(history: list[ModelMessage]) -> list[ModelMessage]:
    """Consecutive requests (a tool's results, then the user's next turn) as one request."""
    out: list[ModelMessage] = []
    for message in history:
        if isinstance(message, ModelRequest) and out and isinstance(out[-1], ModelRequest):
            out[-1] = ModelRequest(parts=[*out[-1].parts, *message.parts])
        else:
            out.append(message)
    return out


# -- history → browser ------------------------------------------------------------------------------
def _dump_user(part: UserPromptPart) -> list[UIMessagePart]:
    if isinstance(part.content, str):
        return [TextUIPart(text=part.content)]
    out: list[UIMessagePart] = []
    for item in part.content:
        if isinstance(item, str):
            out.append(TextUIPart(text=item))
        elif isinstance(item, TextContent):
            out.append(TextUIPart(text=item.content))
        elif isinstance(item, BinaryContent):
            out.append(FileUIPart(media_type=item.media_type, url=item.data_uri))
        elif isinstance(item, (ImageUrl, AudioUrl, VideoUrl, DocumentUrl)):
            out.append(FileUIPart(media_type=item.media_type or 'application/octet-stream', url=item.url))
    return out


def _dump_response(message: ModelResponse, tools: dict[str, ToolUIPart]) -> list[UIMessagePart]:
    out: list[UIMessagePart] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            out.append(TextUIPart(text=part.content, state='done'))
        elif isinstance(part, ThinkingPart):
            out.append(ReasoningUIPart(text=part.content, state='done'))
        elif isinstance(part, ToolCallPart):
            tool = ToolUIPart(
                type=f'tool-{part.tool_name}',
                tool_call_id=part.tool_call_id,
                state='input-available',
                input=part.args_as_dict(),
                call_provider_metadata=_raw_args(part.args),
            )
            tools[part.tool_call_id] = tool
            out.append(tool)
        elif isinstance(part, NativeToolCallPart):
            tool = ToolUIPart(
                type=f'tool-{part.tool_name}',
                tool_call_id=part.tool_call_id,
                state='input-available',
                input=part.args_as_dict(),
                provider_executed=True,
                call_provider_metadata=_raw_args(part.args),
            )
            tools[part.tool_call_id] = tool
            out.append(tool)
        elif isinstance(part, NativeToolReturnPart) and part.tool_call_id in tools:
            tools[part.tool_call_id].state = 'output-available'
            tools[part.tool_call_id].output = part.content
    return out


def _answer(tools: dict[str, ToolUIPart], part: ToolReturnPart | RetryPromptPart) -> None:
    tool = tools.get(part.tool_call_id)
    if tool is None:
        return
    if isinstance(part, RetryPromptPart) or part.outcome in ('failed', 'retried'):
        tool.state, tool.error_text = (
            'output-error',
            part.content if isinstance(part.content, str) else str(part.content),
        )
    elif part.outcome == 'denied':
        tool.state = 'output-denied'
    else:
        tool.state, tool.output = 'output-available', part.content
