"""A model request that failed: the provider errors and their categories (see the package docstring)."""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from threadline.exceptions._base import AgentRunError

__all__ = [
    'ModelAPIError',
    'ModelHTTPError',
    'ModelConnectionError',
    'TransportPhase',
    'ModelTimeoutError',
    'ModelRequestTimeout',
    'ModelRateLimitError',
    'ModelQuotaExceededError',
    'ModelUnavailableError',
    'ModelOverloadedError',
    'ModelServerError',
    'ModelRequestRejectedError',
    'ModelContextWindowExceededError',
    'ModelAuthenticationError',
    'ModelNotFoundError',
    'HTTPErrorCategory',
    'http_error_for',
]


class ModelAPIError(AgentRunError):
    """A request to a model's provider failed; `model_name` says which model."""

    def __init__(self, model_name: str, message: str) -> None:
        self.model_name = model_name
        super().__init__(message)


class ModelHTTPError(ModelAPIError):
    """The provider answered with an HTTP error; `status_code`, `model_name` and `body` say which."""

    def __init__(self, status_code: int, model_name: str, body: object = None) -> None:
        self.status_code = status_code
        self.body = body
        ModelAPIError.__init__(self, model_name, f'status_code: {status_code}, model_name: {model_name}, body: {body}')

    def __reduce__(self) -> tuple[Any, ...]:
        # A categorized error's class is made at runtime: pickle rebuilds it from its category.
        category = next((c for c, made in _HTTP_CATEGORIES.items() if made is type(self)), None)
        return (_rebuilt_http_error, (category, self.status_code, self.model_name, self.body))

    @staticmethod
    def for_category(
        category: HTTPErrorCategory | None, *, status_code: int, model_name: str, body: object = None
    ) -> ModelHTTPError:
        """An HTTP error that `except ModelHTTPError` and `except category` both catch (as
        pydantic-ai 2.62's), for a custom model or a test."""
        return http_error_for(category, status_code=status_code, model_name=model_name, body=body)


def _rebuilt_connection_error(
    kind: type[ModelConnectionError], model_name: str, message: str, phase: TransportPhase | None
) -> ModelConnectionError:
    return kind(model_name, message, phase=phase)


def _rebuilt_http_error(
    category: HTTPErrorCategory | None, status_code: int, model_name: str, body: object
) -> ModelHTTPError:
    return http_error_for(category, status_code=status_code, model_name=model_name, body=body)


TransportPhase: TypeAlias = Literal['pool', 'connect', 'write', 'read']
"""Where in a request the transport failed: waiting for a pooled connection, opening one (the
request was not sent), sending it (it may have arrived), or reading the answer (it arrived: the
provider may have acted on it)."""


class ModelConnectionError(ModelAPIError):
    """The provider could not be reached, or did not answer in time (after the SDK's retries).

    `phase` says where the transport failed (`TransportPhase`), or None when its error does not
    say; whether a retry could repeat an effect depends on it. The transport's own error is the
    `__cause__`.
    """

    def __init__(self, model_name: str, message: str, *, phase: TransportPhase | None = None) -> None:
        self.phase: TransportPhase | None = phase
        super().__init__(model_name, message)

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt_connection_error, (type(self), self.model_name, str(self), self.phase)


class ModelTimeoutError(ModelConnectionError):
    """One attempt at the request timed out in the SDK's or HTTP client's own timeout."""


# The categories of a provider's refusal, as pydantic-ai 2.62 names them: catch the category, or
# `ModelHTTPError` for any status; an HTTP error in a category is an instance of both.
class ModelRequestTimeout(ModelAPIError):
    """A request to a model did not finish within its `request_timeout` setting (`timeout`, in
    seconds): every attempt the SDK made, and a stream read to its last chunk, count."""

    def __init__(self, model_name: str, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(model_name, f'Request to model {model_name!r} timed out after {timeout:g} seconds')

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return self.__class__, (self.model_name, self.timeout)


class ModelRateLimitError(ModelAPIError):
    """A rate limit was reached (an HTTP 429): waiting and retrying may succeed."""


class ModelQuotaExceededError(ModelAPIError):
    """The account's quota, credits or billing is exhausted (an HTTP 402, or a 429 that says so)."""


class ModelUnavailableError(ModelAPIError):
    """The provider or model could not serve the request for now (an HTTP 503)."""


class ModelOverloadedError(ModelUnavailableError):
    """... because it is overloaded (an HTTP 529, or a provider that says so)."""


class ModelServerError(ModelAPIError):
    """The provider failed with a server error not otherwise categorized (an HTTP 500, 502, 504)."""


class ModelRequestRejectedError(ModelAPIError):
    """The provider rejected the request itself (an HTTP 400 or 422): resending it unchanged fails again."""


class ModelContextWindowExceededError(ModelRequestRejectedError):
    """The input exceeds the model's context window: compact or shorten the history and retry."""


class ModelAuthenticationError(ModelRequestRejectedError):
    """The credentials were refused or may not make this request (an HTTP 401 or 403)."""


class ModelNotFoundError(ModelRequestRejectedError):
    """The model or resource the request names was not found (an HTTP 404)."""


HTTPErrorCategory = type[ModelAPIError]
_HTTP_CATEGORIES: dict[HTTPErrorCategory, type[ModelHTTPError]] = {}


def _http_error_class(category: HTTPErrorCategory) -> type[ModelHTTPError]:
    """A `ModelHTTPError` that is also a `category`, named as the category (made once per category)."""
    made = _HTTP_CATEGORIES.get(category)
    if made is None:
        made = type(category.__name__, (ModelHTTPError, category), {'__module__': __name__})
        _HTTP_CATEGORIES[category] = made
    return made


def http_error_for(
    category: HTTPErrorCategory | None, *, status_code: int, model_name: str, body: object = None
) -> ModelHTTPError:
    """A `ModelHTTPError` that is an instance of `category` too (None: a plain one)."""
    cls = ModelHTTPError if category is None else _http_error_class(category)
    return cls(status_code, model_name, body)
