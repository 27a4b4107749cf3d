"""`OpenAIChatModel`: OpenAI Chat Completions (and any compatible server: vLLM, Ollama, LiteLLM)
through the official `openai` SDK (extra `openai`).

Request mapping:
- the standing system prompt goes first as system messages (role `system_prompt_role`), the running
  agent's instructions right after them; a mid-conversation system prompt becomes a system message
  in place (Chat Completions accepts them anywhere);
- user content: text, image URLs and image bytes (`image_url`), audio bytes (`input_audio`, wav/mp3),
  PDF bytes and OpenAI file ids (`file`); document, audio and video URLs are refused before sending
  (Chat Completions cannot fetch them); a `CachePoint` puts an explicit `prompt_cache_breakpoint` on
  the content part before it (with the request's cache TTL: OpenAI's TTLs are not CachePoint's);
- tool calls and results pair by id; `failed` / `retried` results go as `{"error": ...}`, arguments
  cut off mid-stream as `{"INVALID_JSON": "<raw>"}`; built-in tool parts have no place in Chat
  Completions and are left out;
- thinking goes back as `<think>` text in the assistant content, in part order, except reasoning
  this server sent in a field of its own (`reasoning_content`), which goes back in that field; a
  response with neither text nor calls is left out (the API refuses such an assistant message);
- a tool definition carries `"strict": true` when its schema fits OpenAI's strict mode, unless the
  tool opted out (`strict=False`); see `_strict` for the rules.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from threadline.exceptions import UnexpectedModelBehavior, UserError
from threadline.messages import (
    AudioUrl,
    BinaryContent,
    CachePoint,
    DocumentUrl,
    FinishReason,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    RequestUsage,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UploadedFile,
    UserPromptPart,
    VideoUrl,
)
from threadline.messages.wire import JSONObject
from threadline.models._base import (
    ModelProfile,
    ModelRequestParameters,
    ModelSettings,
    ToolDefinition,
)
from threadline.models._openai_provider import OpenAIProvider, json_schema_format
from threadline.models._openai_reasoning import (
    OpenAIChatModelSettings,
    openai_reasoning_keys,
    request_effort,
    without_sampling_while_reasoning,
)
from threadline.models._profile import ModelProfileSpec, merge_profile, resolve_profile
from threadline.models._provider import ProviderModel, binary_base64, require_extra
from threadline.models._render import standing_prompt_count
from threadline.models._stream import ModelStreamEvent, StreamedResponse
from threadline.models._strict import strict_tool_schema
from threadline.models._thinking import resolve_thinking
from threadline.models.openai_responses import OpenAIResponsesModel, OpenAIResponsesModelSettings

if TYPE_CHECKING:
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletionChunk

__all__ = [
    'OpenAIChatModel',
    'OpenAIChatModelSettings',
    'OpenAIProvider',
    'OpenAIResponsesModel',
    'OpenAIResponsesModelSettings',
]

_FINISH: dict[str, FinishReason] = {
    'stop': 'stop',
    'length': 'length',
    'tool_calls': 'tool_call',
    'content_filter': 'content_filter',
    'function_call': 'tool_call',
}


class OpenAIChatModel(ProviderModel[OpenAIProvider]):
    """A Chat Completions model (see the module docstring for how a history is mapped)."""

    provider_name = 'openai'
    unsupported_settings = frozenset({'top_k'})

    def __init__(
        self,
        model_name: str,
        *,
        provider: OpenAIProvider | None = None,
        profile: ModelProfileSpec | None = None,
        system_prompt_role: str = 'system',
    ) -> None:
        default = merge_profile(
            ModelProfile(supports_inline_system_prompts=True, supports_json_schema_output=True),
            openai_reasoning_keys(model_name),
        )
        super().__init__(model_name, provider, resolve_profile(default, profile))
        self.system_prompt_role = system_prompt_role

    def _default_provider(self) -> OpenAIProvider:
        return OpenAIProvider()

    # -- requests -------------------------------------------------------------------------------
    def request_body(
        self, messages: Sequence[ModelMessage], settings: ModelSettings | None, params: ModelRequestParameters
    ) -> JSONObject:
        """The Chat Completions request body for a (rendered) history: what `request` sends."""
        body: JSONObject = {'model': self._model_name, 'messages': self.map_messages(messages, params)}
        tools = [*params.function_tools, *params.output_tools]
        if tools:
            body['tools'] = [_tool(t) for t in tools]
            if not params.allow_text_output:
                body['tool_choice'] = 'required'
        if params.output_mode == 'native' and params.output_object is not None:
            body['response_format'] = {'type': 'json_schema', 'json_schema': json_schema_format(params.output_object)}
        elif params.output_mode == 'prompted':
            body['response_format'] = {'type': 'json_object'}
        thinking = resolve_thinking(settings, params, self.profile)
        settings = without_sampling_while_reasoning(settings or {}, thinking, self.profile)
        if (effort := request_effort(thinking, self.profile, settings, api='chat')) is not None:
            body['reasoning_effort'] = effort
        if 'max_tokens' in settings:
            body['max_completion_tokens'] = settings['max_tokens']
        for key in ('temperature', 'top_p', 'seed', 'presence_penalty', 'frequency_penalty', 'logit_bias'):
            if key in settings:
                body[key] = settings[key]
        if 'parallel_tool_calls' in settings and tools:  # the API refuses it without tools
            body['parallel_tool_calls'] = settings['parallel_tool_calls']
        if 'stop_sequences' in settings:
            body['stop'] = settings['stop_sequences']
        return body

    def map_messages(self, messages: Sequence[ModelMessage], params: ModelRequestParameters) -> list[JSONObject]:
        out: list[JSONObject] = []
        standing = standing_prompt_count(messages)
        first_request = True
        for index, message in enumerate(messages):
            if isinstance(message, ModelRequest):
                tool_files: list[JSONObject] = []
                for j, part in enumerate(message.parts):
                    if isinstance(part, SystemPromptPart):
                        out.append({'role': self.system_prompt_role, 'content': part.content})
                        if first_request and j == standing - 1 and params.instructions:
                            out.append({'role': self.system_prompt_role, 'content': params.instructions})
                    elif isinstance(part, UserPromptPart):
                        out.append({'role': 'user', 'content': self._user_content(part, index, j)})
                    elif isinstance(part, ToolReturnPart):
                        # A tool message takes text only: its files follow the request's parts in a
                        # user message, each framed by the call it came from.
                        text, files = part.model_response_str_and_user_content()
                        if files and isinstance(items := self._user_content(UserPromptPart(files), index, j), list):
                            tool_files.extend(items)
                        out.append({'role': 'tool', 'tool_call_id': part.tool_call_id, 'content': text})
                if tool_files:
                    out.append({'role': 'user', 'content': tool_files})
                if first_request and standing == 0 and params.instructions:
                    out.insert(0, {'role': self.system_prompt_role, 'content': params.instructions})
                first_request = False
            else:
                assistant = self._assistant(message)
                if assistant is not None:
                    out.append(assistant)
        if first_request and params.instructions:
            out.insert(0, {'role': self.system_prompt_role, 'content': params.instructions})
        return out

    def _user_content(self, part: UserPromptPart, index: int, j: int) -> str | list[JSONObject]:
        if isinstance(part.content, str):
            return part.content
        items: list[JSONObject] = []
        for item in part.content:
            if isinstance(item, str):
                items.append({'type': 'text', 'text': item})
            elif isinstance(item, TextContent):
                items.append({'type': 'text', 'text': item.content})
            elif isinstance(item, ImageUrl):
                items.append({'type': 'image_url', 'image_url': {'url': item.url}})
            elif isinstance(item, BinaryContent) and item.is_image:
                items.append({'type': 'image_url', 'image_url': {'url': item.data_uri}})
            elif isinstance(item, BinaryContent) and item.media_type in ('audio/wav', 'audio/mpeg', 'audio/mp3'):
                audio_format = 'wav' if item.media_type == 'audio/wav' else 'mp3'
                items.append(
                    {'type': 'input_audio', 'input_audio': {'data': binary_base64(item), 'format': audio_format}}
                )
            elif isinstance(item, BinaryContent) and item.media_type == 'application/pdf':
                items.append(
                    {'type': 'file', 'file': {'file_data': item.data_uri, 'filename': f'{item.identifier}.pdf'}}
                )
            elif isinstance(item, UploadedFile) and item.provider_name == 'openai':
                items.append({'type': 'file', 'file': {'file_id': item.file_id}})
            elif isinstance(item, CachePoint):
                if not items:
                    raise UserError(f'messages[{index}].parts[{j}]: a CachePoint needs content before it')
                # OpenAI's TTLs (30m/12h) differ from CachePoint's (5m/1h): inherit the request's.
                items[-1]['prompt_cache_breakpoint'] = {'mode': 'explicit'}
            else:
                raise UserError(
                    f'messages[{index}].parts[{j}]: the openai provider (Chat Completions) cannot take '
                    f'{_describe(item)}; send it as bytes (BinaryContent) or use a provider that accepts it'
                )
        return items

    def _assistant(self, message: ModelResponse) -> JSONObject | None:
        """The assistant message for a response; None for one with neither text nor calls (the API
        refuses an assistant message with neither), as pydantic-ai leaves it out."""
        texts: list[str] = []
        fields: dict[str, list[str]] = {}
        for part in message.parts:
            if isinstance(part, TextPart):
                texts.append(part.content)
            elif isinstance(part, ThinkingPart):
                if part.id and part.id != 'content' and part.provider_name == self.provider_name:
                    # Reasoning this server sent in a field of its own goes back in that field.
                    fields.setdefault(part.id, []).append(part.content)
                else:
                    texts.append(f'<think>\n{part.content}\n</think>')
        calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
        if not texts and not calls:
            return None
        out: JSONObject = {'role': 'assistant', 'content': '\n\n'.join(texts) if texts else None}
        for name, values in fields.items():
            out[name] = '\n\n'.join(values)
        if calls:
            out['tool_calls'] = [
                {
                    'id': c.tool_call_id,
                    'type': 'function',
                    'function': {'name': c.tool_name, 'arguments': c.args_as_json_str()},
                }
                for c in calls
            ]
        return out

    stream_fields: ClassVar[JSONObject] = {'stream': True, 'stream_options': {'include_usage': True}}

    def _endpoint(self) -> tuple[Any, str, Any, Any]:
        openai = require_extra('openai', 'openai')
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        return openai, '/chat/completions', ChatCompletion, ChatCompletionChunk

    def _streamed(self, stream: Any) -> StreamedResponse:
        return _OpenAIStream(self._model_name, stream)

    def _response(self, completion: Any) -> ModelResponse:
        try:
            choice = completion.choices[0]
            message = choice.message
        except (AttributeError, IndexError, TypeError):
            raise UnexpectedModelBehavior('the provider answered without a choice', repr(completion)) from None
        parts: list[ModelResponsePart] = []
        reasoning = _reasoning(message)
        if reasoning:
            parts.append(ThinkingPart(reasoning, id='reasoning_content', provider_name='openai'))
        if message.content:
            parts.append(TextPart(message.content))
        for call in message.tool_calls or []:
            parts.append(ToolCallPart(call.function.name, call.function.arguments, call.id))
        return ModelResponse(
            parts=parts,
            usage=_usage(completion.usage),
            model_name=completion.model,
            provider_name='openai',
            provider_response_id=completion.id,
            finish_reason=_FINISH.get(choice.finish_reason or ''),
            provider_details={'timestamp': datetime.fromtimestamp(completion.created, tz=UTC).isoformat()}
            if getattr(completion, 'created', None)
            else None,
        )


class _OpenAIStream(StreamedResponse):
    def __init__(self, model_name: str, stream: AsyncIterable[ChatCompletionChunk]) -> None:
        super().__init__(model_name, 'openai')
        self._stream = stream

    async def _events(self) -> AsyncIterator[ModelStreamEvent]:
        async for chunk in self._stream:
            self.provider_response_id = chunk.id or self.provider_response_id
            self.model_name = chunk.model or self.model_name
            if chunk.usage is not None:
                self.usage = _usage(chunk.usage)
            for choice in chunk.choices or []:
                delta = choice.delta
                if choice.finish_reason:
                    self.finish_reason = _FINISH.get(choice.finish_reason)
                if delta is None:
                    continue
                reasoning = _reasoning(delta)
                if reasoning:
                    yield self.parts.thinking('reasoning', reasoning, provider_name='openai', id='reasoning_content')
                if delta.content:
                    yield self.parts.text('content', delta.content)
                for call in delta.tool_calls or []:
                    function = call.function
                    yield self.parts.tool_call(
                        ('tool', call.index),
                        function.name if function else None,
                        function.arguments if function else None,
                        call.id,
                    )


def _tool(tool: ToolDefinition) -> JSONObject:
    """A tool definition, with `strict: true` when the tool's schema fits strict mode (see
    `_strict`); the schema goes in the form strict mode wants either way."""
    parameters, strict = strict_tool_schema(tool.parameters_json_schema, tool.strict)
    function: JSONObject = {'name': tool.name, 'description': tool.description or '', 'parameters': parameters}
    if strict:
        function['strict'] = True
    return {'type': 'function', 'function': function}


def _reasoning(message: object) -> str | None:
    """Reasoning text that compatible servers (vLLM, DeepSeek, Ollama) add as `reasoning_content`."""
    value = getattr(message, 'reasoning_content', None) or (getattr(message, 'model_extra', None) or {}).get(
        'reasoning_content'
    )
    return value if isinstance(value, str) else None


def _usage(usage: CompletionUsage | None) -> RequestUsage:
    if usage is None:
        return RequestUsage()
    prompt_details = getattr(usage, 'prompt_tokens_details', None)
    completion_details = getattr(usage, 'completion_tokens_details', None)
    return RequestUsage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=getattr(prompt_details, 'cached_tokens', 0) or 0,
        output_reasoning_tokens=getattr(completion_details, 'reasoning_tokens', 0) or 0,
        input_audio_tokens=getattr(prompt_details, 'audio_tokens', 0) or 0,
        output_audio_tokens=getattr(completion_details, 'audio_tokens', 0) or 0,
    )


def _describe(item: object) -> str:
    if isinstance(item, (DocumentUrl, AudioUrl, VideoUrl)):
        return f'a {type(item).__name__} ({item.media_type or "unknown type"})'
    if isinstance(item, BinaryContent):
        return f'BinaryContent of type {item.media_type}'
    if isinstance(item, UploadedFile):
        return f'a file uploaded to {item.provider_name}'
    return type(item).__name__
