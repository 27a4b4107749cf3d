"""`OpenAIResponsesModel`: OpenAI's Responses API through the official `openai` SDK (extra `openai`),
and the conversation state OpenAI can hold for you.

`Agent('openai-responses:gpt-5.2')`, with the key and base URL of `OpenAIProvider`.

Request mapping (`input` items):
- system prompts are `system` messages in place; the running agent's instructions go in
  `instructions`;
- user content: text (`input_text`), images (`input_image`, URL or data URI), PDFs (`input_file`);
  a `CachePoint` is dropped (the Responses API caches on its own);
- a response's text goes back as an `assistant` message, its calls as `function_call` items (with
  the item id when the call came from OpenAI), its reasoning as a `reasoning` item with its id, its
  summary and its encrypted content (`ThinkingPart.signature`, as pydantic-ai keeps it), and only
  to OpenAI; thinking from elsewhere goes back as `<think>` text in an assistant message;
- tool results are `function_call_output` items (a failed one as `{"error": ...}`); built-in tool
  items (web search, code interpreter, ...) are kept opaque as native tool parts and sent back as
  they came, only to OpenAI.

Provider-held conversation state (seed 003, "Letting a provider hold it"):
- `openai_previous_response_id='auto'` chains to the last response OpenAI holds for this history
  and sends only the messages after it; an explicit id seeds the first request of a run; with
  `openai_conversation_id` (an OpenAI conversation) the same trimming applies, using `conversation`.
- The stored history stays complete: the run's messages are all kept; only the request is short.
  A response's id is its `provider_response_id`, so a conversation loaded from a store continues
  the chain.
- A held response is used only while what it was made from is unchanged: each response made with
  this setting records `history_digest` (a SHA-256 of the model name, the history before it and
  its own parts). If the history was edited before it, or the model changed, the whole history is
  sent again, and a log line without content (logger `threadline.models`) says why.
- As seed 003 warns: OpenAI still bills the earlier input tokens of a held conversation, and the
  state is not available under Zero Data Retention (`store` must not be false).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from threadline.exceptions import UnexpectedModelBehavior, UserError
from threadline.messages import (
    BinaryContent,
    CachePoint,
    FinishReason,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    NativeToolCallPart,
    NativeToolReturnPart,
    RequestUsage,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UploadedFile,
    UserPromptPart,
)
from threadline.messages.wire import JSONObject, encoder
from threadline.models._base import ModelProfile, ModelRequestParameters, ModelSettings, ToolDefinition
from threadline.models._openai_provider import OpenAIProvider, json_schema_format
from threadline.models._openai_reasoning import (
    OpenAIChatModelSettings,
    openai_reasoning_keys,
    responses_reasoning,
    without_sampling_while_reasoning,
)
from threadline.models._profile import ModelProfileSpec, merge_profile, resolve_profile
from threadline.models._provider import ProviderModel, require_extra, tool_result_text
from threadline.models._stream import ModelStreamEvent, StreamedResponse
from threadline.models._strict import strict_tool_schema
from threadline.models._thinking import resolve_thinking

if TYPE_CHECKING:
    from openai.types.responses import ResponseUsage

__all__ = ['OpenAIResponsesModel', 'OpenAIResponsesModelSettings']

logger = logging.getLogger('threadline.models')


class OpenAIResponsesModelSettings(OpenAIChatModelSettings, total=False):
    """Settings of the Responses API beside the common ones."""

    openai_previous_response_id: Literal['auto'] | str
    """`'auto'`: continue the last response OpenAI holds for this history; an id: start from it."""
    openai_conversation_id: str
    """An OpenAI conversation (`conv_...`) holding the earlier turns."""
    openai_store: bool
    """Whether OpenAI stores the response (its default is to store)."""


class OpenAIResponsesModel(ProviderModel[OpenAIProvider]):
    """A Responses API model (see the module docstring for the mapping and held state)."""

    provider_name = 'openai'
    # The Responses API has no field for these.
    unsupported_settings = frozenset(
        {'frequency_penalty', 'logit_bias', 'presence_penalty', 'seed', 'stop_sequences', 'top_k'}
    )

    def __init__(
        self, model_name: str, *, provider: OpenAIProvider | None = None, profile: ModelProfileSpec | None = None
    ) -> None:
        default = merge_profile(
            ModelProfile(supports_inline_system_prompts=True, supports_json_schema_output=True),
            openai_reasoning_keys(model_name),
        )
        super().__init__(model_name, provider, resolve_profile(default, profile))

    def _default_provider(self) -> OpenAIProvider:
        return OpenAIProvider()

    # -- requests -------------------------------------------------------------------------------
    def request_body(
        self, messages: Sequence[ModelMessage], settings: ModelSettings | None, params: ModelRequestParameters
    ) -> JSONObject:
        """The Responses API request body for a (rendered) history: what `request` sends."""
        thinking = resolve_thinking(settings, params, self.profile)
        options: dict[str, Any] = dict(without_sampling_while_reasoning(settings or {}, thinking, self.profile))
        previous, sent = self._held_state(list(messages), options)
        body: JSONObject = {'model': self._model_name, 'input': map_input(sent, self.provider_name)}
        if not body['input'] and previous is None:
            body['input'] = [{'role': 'user', 'content': ''}]
        if params.instructions:
            body['instructions'] = params.instructions
        tools = [*params.function_tools, *params.output_tools]
        if tools:
            body['tools'] = [_tool(t) for t in tools]
            if not params.allow_text_output:
                body['tool_choice'] = 'required'
        if params.output_mode == 'native' and params.output_object is not None:
            body['text'] = {'format': {'type': 'json_schema', **json_schema_format(params.output_object)}}
        elif params.output_mode == 'prompted':
            body['text'] = {'format': {'type': 'json_object'}}
        if self.profile.get('openai_supports_reasoning', False):
            # Reasoning comes back encrypted, so it can be sent back even when nothing is stored.
            body['include'] = ['reasoning.encrypted_content']
        if reasoning := responses_reasoning(thinking, self.profile, options):  # type: ignore[arg-type]
            body['reasoning'] = reasoning
        if previous is not None:
            body['previous_response_id'] = previous
        if 'openai_conversation_id' in options:
            body['conversation'] = options['openai_conversation_id']
        if 'openai_store' in options:
            body['store'] = options['openai_store']
        for ours, theirs in (('max_tokens', 'max_output_tokens'), ('temperature', 'temperature'), ('top_p', 'top_p')):
            if ours in options:
                body[theirs] = options[ours]
        if 'parallel_tool_calls' in options and tools:
            body['parallel_tool_calls'] = options['parallel_tool_calls']
        return body

    def _held_state(
        self, messages: list[ModelMessage], options: dict[str, Any]
    ) -> tuple[str | None, list[ModelMessage]]:
        """The response OpenAI holds to continue from (or None) and the messages still to send."""
        setting = options.get('openai_previous_response_id')
        if setting is None and 'openai_conversation_id' not in options:
            return None, messages
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if not (isinstance(message, ModelResponse) and message.provider_name == self.provider_name):
                continue
            if message.history_digest is not None and message.history_digest != self.digest(messages[:index], message):
                logger.info(
                    'openai responses: the history before held response %s changed (or the model did): '
                    'sending the whole history',
                    message.provider_response_id,
                )
                return None, messages
            if message.provider_response_id is None:
                break
            held = None if 'openai_conversation_id' in options else message.provider_response_id
            return held, messages[index + 1 :]
        if setting not in (None, 'auto'):
            return str(setting), messages
        return None, messages

    def digest(self, before: Sequence[ModelMessage], response: ModelResponse) -> str:
        """What a held response was made from: the model, the history before it, and its parts."""
        hasher = hashlib.sha256(self._model_name.encode())
        for message in before:
            hasher.update(encoder.encode(_without_volatile(message)))
        hasher.update(encoder.encode(response.parts))
        return hasher.hexdigest()

    stream_fields: ClassVar[JSONObject] = {'stream': True}

    def _endpoint(self) -> tuple[Any, str, Any, Any]:
        openai = require_extra('openai', 'openai')
        from openai.types.responses import Response, ResponseStreamEvent

        return openai, '/responses', Response, ResponseStreamEvent

    async def request(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        response = await super().request(messages, model_settings, model_request_parameters)
        return self._record_digest(messages, model_settings, response)

    def _record_digest(
        self, messages: Sequence[ModelMessage], settings: ModelSettings | None, response: ModelResponse
    ) -> ModelResponse:
        options: dict[str, Any] = dict(settings or {})
        if options.get('openai_previous_response_id') is not None or 'openai_conversation_id' in options:
            response.history_digest = self.digest(messages, response)
        return response

    def _streamed(self, stream: Any) -> StreamedResponse:
        return _ResponsesStream(self._model_name, stream)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: object = None,
    ) -> AsyncIterator[StreamedResponse]:
        async with super().request_stream(messages, model_settings, model_request_parameters) as streamed:
            assert isinstance(streamed, _ResponsesStream)
            streamed.on_complete = lambda response: self._record_digest(messages, model_settings, response)
            yield streamed

    def _response(self, raw: Any) -> ModelResponse:
        if not hasattr(raw, 'output'):
            raise UnexpectedModelBehavior('the provider answered without output', repr(raw))
        parts = [part for item in raw.output or [] for part in _output_item(item)]
        return ModelResponse(
            parts=parts,
            usage=_usage(raw.usage),
            model_name=raw.model,
            provider_name='openai',
            provider_response_id=raw.id,
            finish_reason=_finish(raw),
        )


def _without_volatile(
    message: ModelMessage,
) -> list[tuple[str, object, str | None]] | list[ModelResponsePart]:
    """A message as the digest sees it: what the provider was sent, not when or by which run."""
    if isinstance(message, ModelRequest):
        return [
            (type(p).__name__, getattr(p, 'content', None), getattr(p, 'tool_call_id', None)) for p in message.parts
        ]
    return message.parts


def _tool(tool: ToolDefinition) -> JSONObject:
    parameters, strict = strict_tool_schema(tool.parameters_json_schema, tool.strict)
    return {
        'type': 'function',
        'name': tool.name,
        'description': tool.description or '',
        'parameters': parameters,
        'strict': bool(strict),
    }


def map_input(messages: Sequence[ModelMessage], provider_name: str) -> list[JSONObject]:
    """The `input` items for a (rendered) history."""
    items: list[JSONObject] = []
    for index, message in enumerate(messages):
        if isinstance(message, ModelRequest):
            for j, part in enumerate(message.parts):
                if isinstance(part, SystemPromptPart):
                    items.append({'role': 'system', 'content': part.content})
                elif isinstance(part, UserPromptPart):
                    items.append({'role': 'user', 'content': _user_content(part, index, j)})
                elif isinstance(part, ToolReturnPart):
                    output: str | list[JSONObject] = tool_result_text(part)
                    if part.files:  # text and files in their order, as input items (the API takes both)
                        output = _user_content(UserPromptPart(part.content_items(mode='str')), index, j)
                    items.append({'type': 'function_call_output', 'call_id': part.tool_call_id, 'output': output})
        else:
            items.extend(_response_items(message, provider_name))
    return items


def _user_content(part: UserPromptPart, index: int, j: int) -> str | list[JSONObject]:
    if isinstance(part.content, str):
        return part.content
    out: list[JSONObject] = []
    for item in part.content:
        if isinstance(item, str):
            out.append({'type': 'input_text', 'text': item})
        elif isinstance(item, TextContent):
            out.append({'type': 'input_text', 'text': item.content})
        elif isinstance(item, CachePoint):
            continue
        elif isinstance(item, ImageUrl):
            out.append({'type': 'input_image', 'image_url': item.url, 'detail': 'auto'})
        elif isinstance(item, BinaryContent) and item.is_image:
            out.append({'type': 'input_image', 'image_url': item.data_uri, 'detail': 'auto'})
        elif isinstance(item, BinaryContent) and item.media_type == 'application/pdf':
            out.append({'type': 'input_file', 'file_data': item.data_uri, 'filename': f'{item.identifier}.pdf'})
        elif isinstance(item, UploadedFile) and item.provider_name == 'openai':
            out.append({'type': 'input_file', 'file_id': item.file_id})
        else:
            raise UserError(
                f'messages[{index}].parts[{j}]: the openai provider (Responses API) cannot take '
                f'{type(item).__name__}{" (" + item.media_type + ")" if isinstance(item, BinaryContent) else ""}; '
                'convert it, or use a provider that accepts it'
            )
    return out


def _response_items(message: ModelResponse, provider_name: str) -> list[JSONObject]:
    """One response as input items, one per part, in order."""
    ours = message.provider_name == provider_name
    items: list[JSONObject] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            items.append({'role': 'assistant', 'content': part.content})
        elif isinstance(part, ThinkingPart):
            if ours and part.id and part.provider_name == provider_name:
                reasoning: JSONObject = {'type': 'reasoning', 'id': part.id, 'summary': []}
                if part.content:
                    reasoning['summary'] = [{'type': 'summary_text', 'text': part.content}]
                reasoning['encrypted_content'] = part.signature
                items.append(reasoning)
            else:
                items.append({'role': 'assistant', 'content': f'<think>\n{part.content}\n</think>'})
        elif isinstance(part, ToolCallPart):
            call: JSONObject = {
                'type': 'function_call',
                'call_id': part.tool_call_id,
                'name': part.tool_name,
                'arguments': part.args_as_json_str(),
            }
            if ours and part.id:
                call['id'] = part.id
            items.append(call)
        elif isinstance(part, NativeToolCallPart) and ours and isinstance(part.provider_details, dict):
            item = part.provider_details.get('item')
            if isinstance(item, dict):
                items.append(item)
    return items


# -- responses --------------------------------------------------------------------------------------
def _output_item(item: Any) -> list[ModelResponsePart]:
    kind = item.type
    if kind == 'message':
        return [TextPart(c.text, id=item.id, provider_name='openai') for c in item.content if c.type == 'output_text']
    if kind == 'function_call':
        return [ToolCallPart(item.name, item.arguments, item.call_id, id=item.id, provider_name='openai')]
    if kind == 'reasoning':
        summary = '\n\n'.join(s.text for s in item.summary or [])
        return [ThinkingPart(summary, id=item.id, signature=item.encrypted_content or None, provider_name='openai')]
    data = item.model_dump(mode='json', exclude_none=True)
    name = kind.removesuffix('_call')
    return [
        NativeToolCallPart(name, None, item.id or '', provider_name='openai', provider_details={'item': data}),
        NativeToolReturnPart(name, {'status': data.get('status')}, item.id or '', provider_name='openai'),
    ]


def _usage(usage: ResponseUsage | None) -> RequestUsage:
    if usage is None:
        return RequestUsage()
    inputs = getattr(usage, 'input_tokens_details', None)
    outputs = getattr(usage, 'output_tokens_details', None)
    return RequestUsage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=getattr(inputs, 'cached_tokens', 0) or 0,
        output_reasoning_tokens=getattr(outputs, 'reasoning_tokens', 0) or 0,
    )


def _finish(raw: Any) -> FinishReason | None:
    status = getattr(raw, 'status', None)
    if status == 'completed':
        return 'tool_call' if any(i.type == 'function_call' for i in raw.output or []) else 'stop'
    if status == 'incomplete':
        reason = getattr(getattr(raw, 'incomplete_details', None), 'reason', None)
        return 'length' if reason == 'max_output_tokens' else 'content_filter'
    if status == 'failed':
        return 'error'
    return None


class _ResponsesStream(StreamedResponse):
    def __init__(self, model_name: str, stream: Any) -> None:
        super().__init__(model_name, 'openai')
        self._stream = stream
        self.on_complete: Callable[[ModelResponse], ModelResponse] | None = None

    def get(self) -> ModelResponse:
        response = super().get()
        if self.complete and self.on_complete is not None:
            response = self.on_complete(response)
        return response

    async def _events(self) -> AsyncIterator[ModelStreamEvent]:
        async for event in self._stream:
            kind = event.type
            if kind == 'response.created':
                self.provider_response_id = event.response.id
                self.model_name = event.response.model or self.model_name
            elif kind == 'response.output_item.added':
                item = event.item
                if item.type == 'function_call':
                    yield self.parts.tool_call(event.output_index, item.name, item.arguments or '', item.call_id)
                    self.parts.parts[-1].id = item.id
                    self.parts.parts[-1].provider_name = 'openai'
                elif item.type == 'reasoning':
                    yield self.parts.thinking(event.output_index, '', None, 'openai', id=item.id)
            elif kind == 'response.output_text.delta':
                yield self.parts.text(event.output_index, event.delta)
            elif kind == 'response.function_call_arguments.delta':
                yield self.parts.tool_call(event.output_index, None, event.delta, None)
            elif kind == 'response.reasoning_summary_text.delta':
                yield self.parts.thinking(event.output_index, event.delta, None, 'openai')
            elif (
                kind == 'response.output_item.done' and event.item.type == 'reasoning' and event.item.encrypted_content
            ):
                yield self.parts.thinking(event.output_index, None, event.item.encrypted_content)
            elif kind in ('response.completed', 'response.incomplete', 'response.failed'):
                self.usage = _usage(event.response.usage)
                self.finish_reason = _finish(event.response)
                self.provider_response_id = event.response.id
