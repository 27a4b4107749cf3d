"""`GoogleModel`: Gemini through the official `google-genai` SDK (extra `google`).

`Agent('google:gemini-…')` reads the key from `GOOGLE_API_KEY` (or `GEMINI_API_KEY`).

Requests: the history is mapped to Gemini's `contents` by `_google_contents` (its rules are
there), and the request JSON is built by `_google_wire`.

Responses: text, thinking (`thought`), function calls (ids kept, or made), and usage from
`usage_metadata`. Errors from the API become `ModelHTTPError` with the status and the body.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

from threadline.exceptions import UnexpectedModelBehavior, UserError
from threadline.messages import (
    FinishReason,
    ModelMessage,
    ModelResponse,
    ModelResponsePart,
    RequestUsage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from threadline.models._base import ModelProfile, ModelRequestParameters, ModelSettings, ToolDefinition
from threadline.models._google_contents import map_messages, native_file_types
from threadline.models._google_provider import GoogleProvider
from threadline.models._google_thinking import google_thinking_config, google_thinking_keys
from threadline.models._google_wire import http_options, post, wire_request
from threadline.models._http_errors import categorized_http_error, connection_error, is_timeout, transport_errors
from threadline.models._profile import ModelProfileSpec, merge_profile, resolve_profile
from threadline.models._provider import ProviderModel
from threadline.models._schema_walk import json_type_of, walk_schema
from threadline.models._stream import ModelStreamEvent, StreamedResponse
from threadline.models._thinking import resolve_thinking

if TYPE_CHECKING:
    from google.genai.types import GenerateContentResponse, GenerateContentResponseUsageMetadata, Part

__all__ = ['GoogleModel', 'GoogleModelSettings', 'GoogleProvider']

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


class GoogleModelSettings(ModelSettings, total=False):
    """Settings of Gemini beside the common ones."""

    google_thinking_config: dict[str, Any]
    """Gemini's `thinking_config` (`thinking_budget`, `thinking_level`, `include_thoughts`), sent
    as given: it wins over the unified `thinking`."""


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
            resolve_profile(
                merge_profile(
                    ModelProfile(supports_json_schema_output=True, supports_tool_return_schema=True),
                    google_thinking_keys(model_name),
                ),
                profile,
            ),
        )

    def _default_provider(self) -> GoogleProvider:
        return GoogleProvider()

    # -- requests -------------------------------------------------------------------------------
    def request_body(
        self, messages: Sequence[ModelMessage], settings: ModelSettings | None, params: ModelRequestParameters
    ) -> dict[str, Any]:
        """What `request` hands the SDK: `model`, `contents` and `config`, in the SDK's dict form."""
        system, contents = map_messages(messages, params, native_file_types=native_file_types(self._model_name))
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
        thinking = resolve_thinking(settings, params, self.profile)
        if given := settings.get('google_thinking_config'):
            config['thinking_config'] = given
        elif thinking is not None:
            config['thinking_config'] = google_thinking_config(thinking, self.profile)
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
