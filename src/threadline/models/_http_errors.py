"""Which category a provider's HTTP error falls in (`threadline.exceptions`' `Model*Error`s), so an
application can catch a rate limit or an overflowing context window by its class.

Rules, as pydantic-ai 2.62 sorts them: the provider's own error code or type wins (an exhausted
quota, an exceeded context window, overloaded, a model not found, a bad API key); otherwise the
status decides: 401/403 authentication, 404 not found, 400/422 rejected, 402 quota, 429 rate
limit, 529 overloaded, 503 unavailable (overloaded when the provider says so), other 5xx server.
"""

from __future__ import annotations

from threadline.exceptions import (
    HTTPErrorCategory,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelNotFoundError,
    ModelOverloadedError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
    TransportPhase,
    http_error_for,
)

__all__ = ['categorized_http_error', 'connection_error', 'is_timeout', 'transport_errors', 'transport_phase']

_QUOTA = ('insufficient_quota', 'billing_hard_limit_reached', 'credit_balance_exhausted')
_CONTEXT_WINDOW = (
    'context_length_exceeded',
    'maximum context length',
    'reduce the length of the messages',
    'prompt is too long',
    'input token count',
)
_OVERLOADED = ('overloaded',)


def categorized_http_error(
    status_code: int,
    model_name: str,
    body: object = None,
    *,
    code: str | None = None,
    error_type: str | None = None,
    message: str | None = None,
) -> ModelHTTPError:
    """The `ModelHTTPError` for this answer, an instance of its category too (see the module rules)."""
    category = _by_provider(code, error_type, message) or _by_status(status_code, code, error_type, message)
    return http_error_for(category, status_code=status_code, model_name=model_name, body=body)


def _says(phrases: tuple[str, ...], *texts: str | None) -> bool:
    return any(text and any(p in text.lower() for p in phrases) for text in texts)


def _by_provider(code: str | None, error_type: str | None, message: str | None) -> HTTPErrorCategory | None:
    if _says(_QUOTA, code, error_type):
        return ModelQuotaExceededError
    if _says(_CONTEXT_WINDOW, code, message):
        return ModelContextWindowExceededError
    if _says(_OVERLOADED, code, error_type):
        return ModelOverloadedError
    if code == 'model_not_found':
        return ModelNotFoundError
    if code == 'invalid_api_key':
        return ModelAuthenticationError
    return None


def _by_status(status: int, *texts: str | None) -> HTTPErrorCategory | None:
    fixed: dict[int, HTTPErrorCategory] = {
        401: ModelAuthenticationError,
        403: ModelAuthenticationError,
        404: ModelNotFoundError,
        400: ModelRequestRejectedError,
        422: ModelRequestRejectedError,
        402: ModelQuotaExceededError,
        429: ModelRateLimitError,
        529: ModelOverloadedError,
    }
    if status in fixed:
        return fixed[status]
    if status == 503:
        return ModelOverloadedError if _says(_OVERLOADED, *texts) else ModelUnavailableError
    return ModelServerError if 500 <= status < 600 else None


# httpx's (and its successor httpx2's: the SDKs use one or the other) transport errors by where in
# the request they happen; the SDKs keep them as `__cause__`.
_PHASES: dict[str, TransportPhase] = {
    'PoolTimeout': 'pool',
    'ConnectTimeout': 'connect',
    'ConnectError': 'connect',
    'WriteTimeout': 'write',
    'WriteError': 'write',
    'ReadTimeout': 'read',
    'ReadError': 'read',
    'RemoteProtocolError': 'read',
}


_HTTP_LIBRARIES = ('httpx', 'httpx2')


def transport_errors() -> tuple[type[BaseException], ...]:
    """The transport error classes of the HTTP libraries installed (to catch whichever an SDK
    raises)."""
    found: list[type[BaseException]] = []
    for name in _HTTP_LIBRARIES:
        try:
            found.append(__import__(name).TransportError)
        except ImportError:
            continue
    return tuple(found)


def is_timeout(error: BaseException) -> bool:
    """Whether a transport error is one of its library's timeouts."""
    return any(cls.__name__ == 'TimeoutException' for cls in type(error).__mro__)


def transport_phase(error: BaseException) -> TransportPhase | None:
    """Where the request failed, from `error` or the errors it was raised from (None when none
    says). Classes are matched by module and name, so no HTTP library need be importable."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for cls in type(current).__mro__:
            if cls.__module__.partition('.')[0] in _HTTP_LIBRARIES and cls.__name__ in _PHASES:
                return _PHASES[cls.__name__]
        current = current.__cause__ or current.__context__
    return None


def connection_error(model_name: str, error: BaseException, *, timeout: bool) -> ModelConnectionError:
    """The `ModelConnectionError` (`ModelTimeoutError` for a timeout) for a transport `error`,
    naming its type and phase, not the request."""
    kind = ModelTimeoutError if timeout else ModelConnectionError
    return kind(model_name, f'{model_name}: {type(error).__name__}: {error}', phase=transport_phase(error))
