"""What a chat client may read of a failed run (shared by the protocol streams)."""

from __future__ import annotations

import logging

from threadline.exceptions import (
    BackendError,
    ConflictError,
    ConversationQuarantined,
    FallbackExceptionGroup,
    HookTimeoutError,
    ModelConnectionError,
    ModelHTTPError,
    UnexpectedModelBehavior,
    UnresolvedToolEffect,
    UsageLimitExceeded,
)

__all__ = ['log_failure', 'public_error']

logger = logging.getLogger('threadline.ui')


def log_failure(error: Exception, request_id: str | None) -> None:
    """Log a failed run by its error's type and the request it answered, never the error's text
    (it can carry the data the run failed on); the reason the client read says which kind it was."""
    reason = public_error(error, detail=False) if not isinstance(error, ConflictError) else 'a conflict'
    if request_id is None:
        logger.warning('a streamed run failed with %s: %s', type(error).__name__, reason)
    else:
        logger.warning('a streamed run failed with %s: %s (request %s)', type(error).__name__, reason, request_id)


def public_error(error: Exception, *, detail: bool) -> str:
    """The error text a stream sends. With `detail`, the exception's type and message. Otherwise a
    short reason a person can act on, built only from the error's kind, an HTTP status and a limit's
    name: an exception's own text can carry the data the run failed on (a provider echoes the
    prompt; a tool error quotes its arguments), so it is never sent, except a store conflict's
    (it names only the conversation the caller sent)."""
    if detail:
        return f'{type(error).__name__}: {error}'
    if isinstance(error, ConflictError):
        return str(error)
    if isinstance(error, ModelHTTPError):
        return _http_reason(error.status_code)
    for kind, reason in _REASONS:
        if isinstance(error, kind):
            return reason.format(limit=getattr(error, 'limit', '') or 'a limit')
    return 'The run failed.'


_REASONS: tuple[tuple[type[Exception], str], ...] = (
    (ModelConnectionError, 'The model could not be reached: try again shortly.'),
    (FallbackExceptionGroup, 'No model could answer: try again shortly.'),
    (UsageLimitExceeded, 'The run reached its usage limit ({limit}).'),
    (UnexpectedModelBehavior, 'The model answered in a way the run cannot use.'),
    (HookTimeoutError, 'A step of the run took too long.'),
    (UnresolvedToolEffect, 'A tool call of an earlier run has an unknown effect: it must be reconciled first.'),
    (ConversationQuarantined, 'This conversation is quarantined after an audit.'),
    (BackendError, 'The store failed: try again shortly.'),
)


def _http_reason(status: int) -> str:
    if status == 429:
        return 'The model is rate limited: try again shortly.'
    if status in (401, 403):
        return "The model refused the server's credentials (a key to fix on the server)."
    if status >= 500:
        return f'The model provider failed (HTTP {status}): try again shortly.'
    return f'The model refused the request (HTTP {status}).'
