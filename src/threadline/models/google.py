"""`GoogleModel`: Gemini through the official `google-genai` SDK (extra `google`).

`Agent('google:gemini-…')` reads the key from `GOOGLE_API_KEY` (or `GEMINI_API_KEY`).

Request mapping:
- system prompts and the running agent's instructions go in `system_instruction`; Gemini has no
  system role inside `contents`, so a mid-conversation system prompt is rendered (by the shared
  renderer) as `<system>`-tagged user text where it happened;
- user content: text, bytes as `inline_data`, URLs and uploaded files as `file_data` (a file URI
  with its media type); a `CachePoint` is dropped (Gemini caches through `cached_content`);
- a tool result goes as a `function_response` with the call's id: an object as is, any other value
  as `{"return_value": value}`, a failed or retried one as `{"error": "<text>"}` (the key Gemini's
  schema gives errors); the parts after the last `function_response` of a request go in a
  `Content` of their own, because Gemini reads a `Content` holding a `function_response` as the
  model's; a tool's files go inside its `function_response` (`parts`) where the model reads them
  there (Gemini 3 and later: images, PDFs, plain text), else after the request's last
  `function_response`, each framed by the call it came from and referenced in the result;
- a response goes back as a `model` turn: calls as `function_call` with their ids and arguments as
  an object (cut-off arguments as `{"INVALID_JSON": "<raw>"}`), thinking as `thought` text;
- thought signatures go back only to Gemini: kept in a part's `provider_details`
  (`thought_signature`, base64) and returned on that part; a signature on a Gemini `ThinkingPart`
  rides on the part after it; the first call of a turn without one carries Gemini's documented
  `skip_thought_signature_validator`, which Gemini requires;
- a history that starts with a model turn gets an empty user turn first.

Responses: text, thinking (`thought`), function calls (ids kept, or made), and usage from
`usage_metadata`. Errors from the API become `ModelHTTPError` with the status and the body.
"""

from __future__ import annotations

import base64
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

import msgspec

from threadline.exceptions import UnexpectedModelBehavior, UserError
from threadline.messages import (
    BinaryContent,
    CachePoint,
    FinishReason,
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
)
from threadline.messages.wire import enc_hook
from threadline.models._base import ModelProfile, ModelRequestParameters, ModelSettings, ToolDefinition
from threadline.models._google_provider import GoogleProvider
from threadline.models._google_wire import http_options, post, wire_request
from threadline.models._http_errors import categorized_http_error, connection_error, is_timeout, transport_errors
from threadline.models._profile import ModelProfileSpec, resolve_profile
from threadline.models._provider import ProviderModel
from threadline.models._schema_walk import json_type_of, walk_schema
from threadline.models._stream import ModelStreamEvent, StreamedResponse

if TYPE_CHECKING:
    from google.genai.types import GenerateContentResponse, GenerateContentResponseUsageMetadata, Part

__all__ = ['GoogleModel', 'GoogleProvider']

PROVIDER_NAMES = frozenset({'google', 'google-gla', 'google-vertex', 'google-cloud'})
"""Names a Gemini response may carry in a stored history (older versions used the last three)."""
_SKIP_SIGNATURE = b'skip_thought_signature_validator'
_FINISH: dict[str, FinishReason] = {
    'STOP': 'stop',
    'MAX_TOKENS': 'length',
    'SAFETY': 'content_filter',
    'RECITATION': 'content_filter',
    'BLOCKLIST': 'content_filter',
    'PROHIBITED_CONTENT': 'content_filter',
    'SPII': 'content_filter',
    'IMAGE_SAFETY': 'content_filter',
    'MALFORMED_FUNCTION_CALL': 'error',
}


class GoogleModel(ProviderModel[GoogleProvider]):
    """A Gemini model (see the module docstring for how a history is mapped)."""

    provider_name = 'google'
    unsupported_settings = frozenset({'extra_body', 'logit_bias', 'parallel_tool_calls'})

    def __init__(
        self, model_name: str, *, provider: GoogleProvider | None = None, profile: ModelProfileSpec | None = None
    ) -> None:
        super().__init__(
            model_name,
            provider,
            resolve_profile(ModelProfile(supports_json_schema_output=True, supports_tool_return_schema=True), profile),
        )

    def _default_provider(self) -> GoogleProvider:
        return GoogleProvider()

    # -- requests -------------------------------------------------------------------------------
    def request_body(
        self, messages: Sequence[ModelMessage], settings: ModelSettings | None, params: ModelRequestParameters
    ) -> dict[str, Any]:
        """What `request` hands the SDK: `model`, `contents` and `config`, in the SDK's dict form."""
        system, contents = map_messages(messages, params, native_file_types=_native_file_types(self._model_name))
        config: dict[str, Any] = {'response_modalities': ['TEXT']}
        if system:
            config['system_instruction'] = {'role': 'user', 'parts': system}
        tools = [*params.function_tools, *params.output_tools]
        if tools:
            config['tools'] = [{'function_declarations': [_declaration(t) for t in tools]}]
            mode = 'AUTO' if params.allow_text_output else 'ANY'
            if mode == 'AUTO' and _validates_tools(self._model_name) and all(t.strict is not False for t in tools):
                mode = 'VALIDATED'  # AUTO with the API holding calls to their schemas, as the reference asks
            config['tool_config'] = {'function_calling_config': {'mode': mode}}
        if params.output_mode == 'native' and params.output_object is not None:
            if params.function_tools:
                raise UserError(
                    'This model does not support `NativeOutput` and function tools at the same time. Use '
                    '`output_type=ToolOutput(...)` instead.'
                )
            output = params.output_object
            schema = walk_schema(output.json_schema, _gemini_node)  # the tool rules; the object's own name stays
            if output.name:
                schema['title'] = output.name
            if output.description:
                schema['description'] = output.description
            config['response_mime_type'] = 'application/json'
            config['response_json_schema'] = schema
        elif params.output_mode == 'prompted' and not tools:
            config['response_mime_type'] = 'application/json'
        settings = settings or {}
        for ours, theirs in (
            ('temperature', 'temperature'),
            ('top_p', 'top_p'),
            ('max_tokens', 'max_output_tokens'),
            ('stop_sequences', 'stop_sequences'),
            ('seed', 'seed'),
            ('top_k', 'top_k'),
            ('presence_penalty', 'presence_penalty'),
            ('frequency_penalty', 'frequency_penalty'),
        ):
            if ours in settings:
                config[theirs] = settings[ours]  # type: ignore[literal-required]
        return {'model': self._model_name, 'contents': contents, 'config': config}

    async def request(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        self.warn_unsupported(model_settings, model_request_parameters)
        body = self.request_body(messages, model_settings, model_request_parameters)
        from google.genai import types

        # The API's JSON built here, not by the SDK's validation and conversion (see _google_wire).
        path, wire = wire_request(body)
        options = http_options(self.provider.client, model_settings or {})
        with _errors(self._model_name):
            text = await post(self.provider.client, path, wire, options)
        try:
            response = types.GenerateContentResponse.model_validate_json(text or '{}')
        except ValueError:  # pydantic's ValidationError: not JSON, or not a response
            raise UnexpectedModelBehavior('the provider answered with a response that cannot be parsed', text) from None
        return _response(response, self._model_name)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: object = None,
    ) -> AsyncIterator[StreamedResponse]:
        self.warn_unsupported(model_settings, model_request_parameters)
        body = self.request_body(messages, model_settings, model_request_parameters)
        if options := http_options(self.provider.client, model_settings or {}):
            body['config'] = {**body['config'], 'http_options': options}
        with _errors(self._model_name):
            stream = await self.provider.client.aio.models.generate_content_stream(**body)
        try:
            yield _GeminiStream(self._model_name, stream)
        finally:
            close = getattr(stream, 'aclose', None)
            if close is not None:
                await close()


def _validates_tools(model_name: str) -> bool:
    """Whether the model has the `VALIDATED` function-calling mode: the thinking models, Gemini 2.5
    and newer, except image models and Gemma (pydantic-ai 2.62's profile rule)."""
    older = 'gemini-1' in model_name or 'gemini-2.0' in model_name or model_name == 'gemini-pro'
    no_thinking = 'gemma' in model_name or older or 'gemini-2.5-flash-image' in model_name
    return not no_thinking and 'image' not in model_name


def _declaration(tool: ToolDefinition) -> dict[str, Any]:
    declaration = {'name': tool.name, 'description': tool.description or '', 'parameters_json_schema': _schema(tool)}
    if tool.return_schema:
        declaration['response_json_schema'] = tool.return_schema
    return declaration


def _schema(tool: Any) -> dict[str, Any]:
    """A tool's schema in the subset Gemini takes (as pydantic-ai 2.62 sends it):
    - `title`, `$schema`, `discriminator`, `examples`, `exclusiveMinimum`/`exclusiveMaximum` are
      removed (Gemini refuses or ignores them);
    - `const` becomes a one-value `enum` (with the `type` its value implies);
    - an `anyOf` of one-value enums of one type becomes one `enum`, each option's description
      joining the parent's (Gemini holds the model to an `enum`, not to such a union);
    - a string's `format` moves into its description."""
    return walk_schema(tool.parameters_json_schema, _gemini_node)


def _gemini_node(schema: dict[str, Any]) -> dict[str, Any]:
    for key in ('$schema', 'discriminator', 'examples', 'title', 'exclusiveMinimum', 'exclusiveMaximum'):
        schema.pop(key, None)
    if (const := schema.pop('const', None)) is not None:
        schema['enum'] = [const]
        if 'type' not in schema and (kind := json_type_of(const)) is not None:
            schema['type'] = kind
    _fold_options(schema)
    if schema.get('type') == 'string' and (fmt := schema.pop('format', None)):
        description = schema.get('description')
        schema['description'] = f'{description} (format: {fmt})' if description else f'Format: {fmt}'
    return schema


def _fold_options(schema: dict[str, Any]) -> None:
    options = schema.get('anyOf')
    if not options or not all(
        isinstance(o, dict) and len(o.get('enum', [])) == 1 and o.keys() <= {'enum', 'type', 'description'}
        for o in options
    ):
        return
    kinds = {o.get('type') for o in options}
    kind = next(iter(kinds))
    if len(kinds) != 1 or 'enum' in schema or schema.get('type', kind) != kind:
        return  # not one described enum: folding would widen what the model may answer
    del schema['anyOf']
    schema['enum'] = [o['enum'][0] for o in options]
    if kind is not None:
        schema['type'] = kind
    described = [f'{o["enum"][0]}: {o["description"]}' for o in options if o.get('description')]
    if described:
        schema['description'] = '\n'.join([*filter(None, [schema.get('description')]), *described])


def map_messages(
    messages: Sequence[ModelMessage], params: ModelRequestParameters, *, native_file_types: tuple[str, ...] = ()
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The `system_instruction` parts and the `contents` for a (rendered) history;
    `native_file_types` are the media types the model reads inside a `function_response`."""
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if isinstance(message, ModelRequest):
            parts: list[dict[str, Any]] = []
            tool_files: list[dict[str, Any]] = []
            for j, part in enumerate(message.parts):
                if isinstance(part, SystemPromptPart):
                    system.append({'text': part.content})
                elif isinstance(part, UserPromptPart):
                    parts.extend(_user_parts(part, index, j))
                elif isinstance(part, ToolReturnPart) and part.files:
                    response, framed = _function_response_with_files(part, native_file_types, index, j)
                    parts.append({'function_response': response})
                    tool_files.extend(framed)
                elif isinstance(part, ToolReturnPart):
                    parts.append({'function_response': _function_response(part)})
            if tool_files:  # after the last function_response: a ToolReturn's user content may follow
                last = max(i for i, p in enumerate(parts) if 'function_response' in p) + 1
                parts[last:last] = tool_files
            contents.extend(_split_after_responses(parts))
        else:
            turn = _model_turn(message)
            if turn:
                contents.append({'role': 'model', 'parts': turn})
    if not contents or contents[0]['role'] == 'model':
        contents.insert(0, {'role': 'user', 'parts': [{'text': ''}]})
    if params.instructions:
        system.append({'text': params.instructions})
    return system, contents


def _split_after_responses(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One request as user `Content`s, a new one starting after each run of `function_response`s."""
    out: list[dict[str, Any]] = []
    current: list[dict[str, Any]] = []
    for part in parts:
        if current and 'function_response' in current[-1] and 'function_response' not in part:
            out.append({'role': 'user', 'parts': current})
            current = []
        current.append(part)
    if current:
        out.append({'role': 'user', 'parts': current})
    return out


def _user_parts(part: UserPromptPart, index: int, j: int) -> list[dict[str, Any]]:
    if isinstance(part.content, str):
        return [{'text': part.content}]
    out: list[dict[str, Any]] = []
    for item in part.content:
        if isinstance(item, str):
            out.append({'text': item})
        elif isinstance(item, TextContent):
            out.append({'text': item.content})
        elif isinstance(item, CachePoint):
            continue
        elif isinstance(item, BinaryContent):
            out.append({'inline_data': {'data': item.data, 'mime_type': item.media_type}})
        elif isinstance(item, UploadedFile):
            out.append({'file_data': {'file_uri': item.file_id, 'mime_type': item.media_type}})
        elif hasattr(item, 'url'):
            out.append({'file_data': {'file_uri': item.url, 'mime_type': item.media_type}})
        else:
            raise UserError(f'messages[{index}].parts[{j}]: the google provider cannot take {type(item).__name__}')
    return out


def _function_response(part: ToolReturnPart) -> dict[str, Any]:

    content = part.content
    if part.outcome in ('failed', 'retried'):
        text = content if isinstance(content, str) else msgspec.json.encode(content, enc_hook=enc_hook).decode()
        response: dict[str, Any] = {'error': text}
    else:
        value = msgspec.json.decode(msgspec.json.encode(content, enc_hook=enc_hook))
        if value is None:
            response = {}
        elif isinstance(value, dict) and all(isinstance(k, str) for k in value):
            response = value
        else:
            response = {'return_value': value}
    return {'name': part.tool_name, 'response': response, 'id': part.tool_call_id}


def _native_file_types(model_name: str) -> tuple[str, ...]:
    """The media types a Gemini model reads inside a `function_response`: Gemini 3 and later
    (not Gemma, 2.5 or earlier) read images, PDFs and plain text there."""
    if 'gemma' in model_name or not model_name.startswith('gemini-') or _OLDER_GEMINI.match(model_name):
        return ()
    return ('image/png', 'image/jpeg', 'image/webp', 'application/pdf', 'text/plain')


_OLDER_GEMINI = re.compile(r'gemini-(?:1|2)[.-]')


def _function_response_with_files(
    part: ToolReturnPart, native_file_types: tuple[str, ...], index: int, j: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A result holding files: those the model reads in a `function_response` go in its `parts`,
    the others after it, framed by the call they came from and referenced in the result."""
    native: list[dict[str, Any]] = []
    framed: list[dict[str, Any]] = []
    references: list[str] = []
    # The user content the helper builds is (opening tag, file, closing tag) per file, in order.
    _, user_content = part.model_response_str_and_user_content(wrap_if_error=False)
    for opening, file, closing in zip(user_content[::3], user_content[1::3], user_content[2::3], strict=True):
        (mapped,) = _user_parts(UserPromptPart([file]), index, j)
        if file.media_type in native_file_types:
            native.append(mapped)
        else:
            references.append(f'See file {file.identifier}.')
            framed.extend([{'text': opening}, mapped, {'text': closing}])
    if part.outcome in ('failed', 'retried'):
        response: dict[str, Any] = {'error': part.model_response_str(wrap_if_error=False)}
    else:
        response = part.model_response_object(wrap_if_error=False)
        if references:
            response = {'output': [response, *references]}
    out: dict[str, Any] = {'name': part.tool_name, 'response': response, 'id': part.tool_call_id}
    if native:
        out['parts'] = native
    return out, framed


def _signature_of(part: Any, message: ModelResponse) -> bytes | None:
    details = part.provider_details
    if not details or not details.get('thought_signature'):
        return None
    if message.provider_name not in PROVIDER_NAMES and part.provider_name not in PROVIDER_NAMES:
        return None
    return base64.b64decode(details['thought_signature'])


def _model_turn(message: ModelResponse) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    pending: bytes | None = None  # a Gemini ThinkingPart's signature, for the part after it
    first_call = True
    for item in message.parts:
        signature = _signature_of(item, message) if hasattr(item, 'provider_details') else None
        if signature is None and pending is not None:
            signature = pending
        pending = None
        part: dict[str, Any] | None = None
        if isinstance(item, ToolCallPart):
            part = {'function_call': {'name': item.tool_name, 'args': item.args_as_dict(), 'id': item.tool_call_id}}
            if signature is None and first_call:
                signature = _SKIP_SIGNATURE
            first_call = False
        elif isinstance(item, TextPart):
            part = {'text': item.content}
        elif isinstance(item, ThinkingPart):
            if item.provider_name in PROVIDER_NAMES and item.signature:
                pending = base64.b64decode(item.signature)
            if item.content:
                part = {'text': item.content, 'thought': True}
        if part is not None:
            if signature is not None:
                part['thought_signature'] = signature
            parts.append(part)
    return parts


# -- responses --------------------------------------------------------------------------------------
def _details(part: Any) -> dict[str, Any] | None:
    signature = getattr(part, 'thought_signature', None)
    return {'thought_signature': base64.b64encode(signature).decode()} if signature else None


def _response_part(part: Part) -> ModelResponsePart | None:
    """A Gemini `Part` as a response part (None for an empty text part)."""
    details = _details(part)
    extra: dict[str, Any] = {'provider_details': details, 'provider_name': 'google'} if details else {}
    if part.text is not None:
        if not part.text and not details:
            return None
        return ThinkingPart(part.text, **extra) if part.thought else TextPart(part.text, **extra)
    if part.function_call is not None:
        call = part.function_call
        if call.id:
            return ToolCallPart(call.name or '', call.args or {}, call.id, **extra)
        return ToolCallPart(call.name or '', call.args or {}, **extra)
    if details:
        return None  # a signature-only part: nothing to show, and refused when sent back
    raise UnexpectedModelBehavior('Gemini answered with a part Threadline does not know', repr(part))


def _response(response: GenerateContentResponse, model_name: str) -> ModelResponse:
    candidates = response.candidates or []
    if not candidates:
        raise UnexpectedModelBehavior('Gemini answered without a candidate', repr(response))
    candidate = candidates[0]
    content = candidate.content
    parts = [p for p in (_response_part(part) for part in (content.parts or [] if content else [])) if p is not None]
    reason = getattr(candidate.finish_reason, 'value', candidate.finish_reason)
    return ModelResponse(
        parts=parts,
        usage=_usage(response.usage_metadata),
        model_name=response.model_version or model_name,
        provider_name='google',
        provider_response_id=response.response_id,
        finish_reason=_FINISH.get(reason or ''),
    )


def _usage(metadata: GenerateContentResponseUsageMetadata | None) -> RequestUsage:
    if metadata is None:
        return RequestUsage()
    thoughts = metadata.thoughts_token_count or 0
    return RequestUsage(
        input_tokens=metadata.prompt_token_count or 0,
        output_tokens=(metadata.candidates_token_count or 0) + thoughts,
        cache_read_tokens=metadata.cached_content_token_count or 0,
        output_reasoning_tokens=thoughts,
    )


class _GeminiStream(StreamedResponse):
    """Gemini streams whole parts: text arrives in pieces that continue the part before them, a
    function call arrives complete."""

    def __init__(self, model_name: str, stream: AsyncIterator[GenerateContentResponse]) -> None:
        super().__init__(model_name, 'google')
        self._stream = stream

    async def _events(self) -> AsyncIterator[ModelStreamEvent]:
        run = 0  # a text run ends at any other part, or at a part with a signature of its own
        last: str | None = None
        async for chunk in self._stream:
            self.provider_response_id = chunk.response_id or self.provider_response_id
            self.model_name = chunk.model_version or self.model_name
            if chunk.usage_metadata is not None:
                self.usage = _usage(chunk.usage_metadata)
            for candidate in chunk.candidates or []:
                if candidate.finish_reason is not None:
                    reason = getattr(candidate.finish_reason, 'value', candidate.finish_reason)
                    self.finish_reason = _FINISH.get(reason or '')
                for part in (candidate.content.parts or []) if candidate.content else []:
                    item = _response_part(part)
                    if item is None:
                        continue
                    kind = type(item).__name__
                    if isinstance(item, (TextPart, ThinkingPart)) and kind == last and not item.provider_details:
                        key = ('run', run)
                        yield (
                            self.parts.text(key, item.content)
                            if isinstance(item, TextPart)
                            else self.parts.thinking(key, item.content)
                        )
                        continue
                    run += 1
                    last = kind if isinstance(item, (TextPart, ThinkingPart)) else None
                    yield self.parts.whole(('run', run), item)


@contextmanager
def _errors(model_name: str) -> Iterator[None]:
    """Turns the SDK's API errors into `ModelHTTPError` (status and body kept), and transport
    errors into `ModelConnectionError`."""
    from google.genai import errors

    try:
        yield
    except errors.APIError as error:
        body = getattr(error, 'details', None) or getattr(error, 'message', None)
        status, message = getattr(error, 'status', None), getattr(error, 'message', None)
        raise categorized_http_error(
            int(error.code or 0),
            model_name,
            body,
            code=status if isinstance(status, str) else None,
            message=message if isinstance(message, str) else None,
        ) from error
    except transport_errors() as error:  # unreachable, or no answer in time
        raise connection_error(model_name, error, timeout=is_timeout(error)) from error
