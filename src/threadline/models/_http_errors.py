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
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelNotFoundError,
    ModelOverloadedError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelServerError,
    ModelUnavailableError,
    http_error_for,
)

__all__ = ['categorized_http_error']

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
