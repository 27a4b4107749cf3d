"""What the provider models share: clients built from a provider object, and HTTP errors."""

from __future__ import annotations

import base64
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import msgspec

from threadline.exceptions import (
    MissingAPIKey,
    ModelHTTPError,
    UnexpectedModelBehavior,
    UserError,
)
from threadline.messages import BinaryContent, ModelMessage, ModelResponse, ToolReturnPart
from threadline.messages.wire import JSONObject, enc_hook
from threadline.models._base import Model, ModelProfile, ModelRequestParameters, ModelSettings
from threadline.models._http_errors import categorized_http_error, connection_error
from threadline.models._stream import StreamedResponse


class _Provider(Protocol):
    client: Any

    async def __aenter__(self) -> Any: ...
    async def __aexit__(self, *exc_info: object) -> bool | None: ...


ProviderT = TypeVar('ProviderT', bound=_Provider)

__all__ = [
    'MissingAPIKey',
    'ModelHTTPError',
    'ProviderModel',
    'binary_base64',
    'env_key',
    'post_json',
    'require_extra',
    'tool_result_text',
]


class ProviderModel(Model, Generic[ProviderT]):
    """What a provider model shares: its name, profile, and a provider built on first use, so a
    missing key or extra is reported when the model is used rather than when it is named."""

    provider_name: ClassVar[str]

    def __init__(self, model_name: str, provider: ProviderT | None, profile: ModelProfile) -> None:
        self._model_name = model_name
        self._provider = provider
        self._profile = profile

    def _default_provider(self) -> ProviderT:
        raise NotImplementedError

    @property
    def provider(self) -> ProviderT:
        if self._provider is None:
            self._provider = self._default_provider()
        return self._provider

    @property
    def model_name(self) -> str:
        return self._model_name

    async def __aenter__(self) -> ProviderModel[ProviderT]:
        """Enter the provider (built now if it was not given), whose client the last exit closes."""
        await self.provider.__aenter__()
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        if self._provider is not None:
            await self._provider.__aexit__(*exc_info)
        return None

    @property
    def system(self) -> str:
        return self.provider_name

    @property
    def base_url(self) -> str | None:
        # Only once the provider exists: building it needs a key, and naming a model must not.
        return getattr(self._provider, 'base_url', None) if self._provider is not None else None

    @property
    def profile(self) -> ModelProfile:
        return self._profile

    # -- what each provider supplies ---------------------------------------------------------------
    stream_fields: ClassVar[JSONObject] = {'stream': True}

    def request_body(
        self, messages: Sequence[ModelMessage], settings: ModelSettings | None, params: ModelRequestParameters
    ) -> JSONObject:
        raise NotImplementedError

    def _endpoint(self) -> tuple[Any, str, Any, Any]:
        """The SDK module, the path, the response model and the stream event model."""
        raise NotImplementedError

    def _response(self, raw: Any) -> ModelResponse:
        raise NotImplementedError

    def _streamed(self, stream: Any) -> StreamedResponse:
        raise NotImplementedError

    # -- shared request plumbing -----------------------------------------------------------------
    def _headers(self, body: JSONObject) -> dict[str, str]:
        """Headers a request needs beside the SDK's own (a provider's beta features)."""
        return {}

    async def _post(self, body: JSONObject, settings: ModelSettings | None, *, stream: bool = False) -> Any:
        """Send `body`: `extra_body` merged in last, `extra_headers` over the provider's own,
        `timeout` and `max_retries` as this request's SDK options."""
        sdk, path, response_type, event_type = self._endpoint()
        settings = settings or {}
        if extra := settings.get('extra_body'):
            body = {**body, **extra}
        return await post_json(
            sdk,
            self.provider.client,
            path,
            body,
            model_name=self._model_name,
            response_type=response_type,
            timeout=settings.get('timeout'),
            max_retries=settings.get('max_retries'),
            stream_cls=sdk.AsyncStream[event_type] if stream else None,
            headers={**self._headers(body), **settings.get('extra_headers', {})},
        )

    async def request(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        self.warn_unsupported(model_settings, model_request_parameters)
        body = self.request_body(messages, model_settings, model_request_parameters)
        return self._response(await self._post(body, model_settings))

    @asynccontextmanager
    async def request_stream(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: object = None,
    ) -> AsyncIterator[StreamedResponse]:
        self.warn_unsupported(model_settings, model_request_parameters)
        body = {**self.request_body(messages, model_settings, model_request_parameters), **self.stream_fields}
        stream = await self._post(body, model_settings, stream=True)
        try:
            yield self._streamed(stream)
        finally:
            await stream.close()


def require_extra(module: str, extra: str) -> ModuleType:
    """Import a provider SDK, or say which extra installs it."""
    try:
        return __import__(module)
    except ImportError:
        raise UserError(
            f"the {extra} provider needs the '{extra}' extra: pip install 'threadline[{extra}]' "
            f"(or uv add 'threadline[{extra}]')"
        ) from None


def env_key(value: str | None, variable: str, provider: str) -> str:
    key = value or os.environ.get(variable)
    if not key:
        raise MissingAPIKey(provider, variable)
    return key


def binary_base64(content: BinaryContent) -> str:
    return base64.b64encode(content.data).decode('ascii')


def tool_result_text(part: ToolReturnPart) -> str:
    """A tool result as the model reads it, as pydantic-ai 2.62 sends it (`model_response_str`):
    text as is, other values as JSON (a date unquoted), nothing as `''`; a `failed` or `retried`
    result as `{"error": ...}` (a synthesized `interrupted` return is its text)."""
    return part.model_response_str()


async def post_json(
    sdk: Any,
    client: Any,
    path: str,
    body: JSONObject,
    *,
    model_name: str,
    response_type: Any,
    timeout: float | None = None,
    max_retries: int | None = None,
    stream_cls: Any = None,
    headers: dict[str, str] | None = None,
) -> Any:
    """POST a wire-form body through an official SDK client and return its response model (or,
    with `stream_cls`, its SSE stream).

    The client still does auth, retries with backoff, error mapping and SSE decoding. The body is
    encoded here, once, because the SDKs' `create` methods walk every field of the params (OpenAI's
    transform costs about 0.5 s per 1,000 messages) and deep-copy them before `json.dumps`.

    Rules: an HTTP error status becomes `ModelHTTPError(status, model, body)`; a connection error or
    timeout becomes `ModelConnectionError`; a 2xx body that is
    not a JSON object becomes `UnexpectedModelBehavior` carrying the raw text; a JSON object is
    built into the SDK's model leniently (`construct`), as the SDKs themselves do.
    """

    options: JSONObject = {'headers': {'content-type': 'application/json', **(headers or {})}}
    if timeout:
        options['timeout'] = timeout
    if max_retries is not None:
        options['max_retries'] = max_retries
    content = msgspec.json.encode(body, enc_hook=enc_hook)
    try:
        if stream_cls is not None:
            return await client.post(
                path, cast_to=response_type, content=content, options=options, stream=True, stream_cls=stream_cls
            )
        text = await client.post(path, cast_to=str, content=content, options=options)
    except sdk.APIStatusError as exc:
        body = _error_body(exc)
        raise categorized_http_error(exc.status_code, model_name, body, **_error_facts(body)) from exc
    except sdk.APIConnectionError as exc:  # timeouts too, after the SDK's own retries
        raise connection_error(model_name, exc, timeout=isinstance(exc, sdk.APITimeoutError)) from exc
    try:
        data = msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise UnexpectedModelBehavior(
            f'the provider answered with a response that cannot be parsed: {exc}', text
        ) from exc
    if not isinstance(data, dict):
        raise UnexpectedModelBehavior('the provider answered with a JSON value that is not an object', text)
    return response_type.construct(**data)


def _error_facts(body: object) -> dict[str, str | None]:
    """The provider's error code, type and message from an error body (OpenAI's and Anthropic's
    both nest them under `error`)."""
    error = body.get('error', body) if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return {}
    facts = {'code': error.get('code'), 'error_type': error.get('type'), 'message': error.get('message')}
    return {k: v if isinstance(v, str) else None for k, v in facts.items()}


def _error_body(exc: Any) -> Any:
    body = getattr(exc, 'body', None)
    if body is not None:
        return body
    return getattr(getattr(exc, 'response', None), 'text', None)
