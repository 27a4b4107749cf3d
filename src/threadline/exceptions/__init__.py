"""The one exception hierarchy of Threadline.

Every error Threadline raises on purpose derives from `ThreadlineError`, so callers can catch the
library's failures without catching their own. Messages name what is wrong, where (message index,
part index, field, conversation) and what to do about it, never the content at that place.

    ThreadlineError
    ├── UserError (RuntimeError)            misuse: bad arguments, a missing extra or key
    │   ├── UnknownModel                    a model name `infer_model` does not know
    │   ├── MissingAPIKey                   a provider without its key
    │   ├── SearchQueryTooLarge             a search query past a bound, or past its time
    │   ├── UnresolvedToolEffect            a run over a call whose effect a crash left unknown
    │   └── UndrainedPendingMessagesError   kept for `except`; never raised
    ├── MessageValidationError (ValueError) a history that does not validate, and where
    ├── AgentRunError (RuntimeError)        a run failed
    │   ├── ModelAPIError
    │   │   ├── ModelHTTPError              the provider answered 4xx/5xx (also one of the categories)
    │   │   ├── ModelRequestTimeout         a request overran its `request_timeout` setting
    │   │   ├── ModelConnectionError        the provider could not be reached (`phase`: where)
    │   │   │   └── ModelTimeoutError       ... in the transport's time
    │   │   ├── ModelRateLimitError, ModelQuotaExceededError, ModelServerError,
    │   │   ├── ModelUnavailableError       └── ModelOverloadedError
    │   │   └── ModelRequestRejectedError   ├── ModelContextWindowExceededError,
    │   │                                   └── ModelAuthenticationError, ModelNotFoundError
    │   ├── FallbackExceptionGroup          every model of a FallbackModel failed
    │   ├── UsageLimitExceeded
    │   ├── ConcurrencyLimitExceeded        a concurrency limiter's queue is full (`max_queued`)
    │   ├── SuspendedResponseExpired        a provider's background job is gone (not raised yet)
    │   ├── UnexpectedModelBehavior
    │   │   ├── ContentFilterError          the provider filtered the answer (finish reason)
    │   │   └── IncompleteToolCall          the token limit cut a tool call's arguments short
    │   ├── HookTimeoutError (TimeoutError) a hook registered with `timeout=` overran
    │   └── RunCancelled                    the application stopped the run (cancel(), a stream)
    │       └── RunTimedOut (TimeoutError)  ... at its `timeout=` deadline
    ├── ReplayRefused (PermissionError)     the audit did not allow a run (in threadline.audit: it
    │                                       carries an AuditReport, and audit comes after exceptions)
    └── StoreError
        ├── ConversationNotFound (LookupError)
        ├── RunNotFound (LookupError)
        ├── ConversationQuarantined
        ├── ConflictError                   a stale write: someone else wrote first
        ├── CorruptRecordError              a stored record failed to read back
        └── BackendError                    the database failed; nothing was written

Outside `ThreadlineError`, on purpose, are the exceptions that steer control flow rather than
report a failure: a user's code raises them, or Threadline raises and catches them itself, and an
`except ThreadlineError` meant for failures must not swallow them.

    ModelRetry, ToolFailed, ApprovalRequired, CallDeferred   raised by tools and hooks
    SkipModelRequest, SkipToolValidation, SkipToolExecution  raised by hooks to answer in place of
                       the model, the arguments' validation or the tool
    ToolArgsError      arguments that did not validate, sent back to the model as a retry
    WouldWait          an in-loop store operation that must go to a worker thread
    HTTPProblem        the server's answer for a bad request (its status and message)
    TurnBusy           another server holds the conversation's turn lease
    DemoFailed         a step of `threadline demo` did not do what it says
    UnknownMediaType (ValueError, KeyError)   a media type with no format name

The warnings (`_warnings`), by pydantic-ai 2.62's names so its filters keep working:
`UnsupportedSettingWarning` (a model ignores a setting the request relies on),
`CostCalculationFailedWarning`, `MessageHistoryMutatedWarning`, `ThreadlineDeprecationWarning`
(alias `PydanticAIDeprecationWarning`), and, for code that names them,
`CostNotFoundWarning`, `UsageExtractionFailedWarning` and `UsageLimitUnavailableWarning`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

__all__ = [
    'CostCalculationFailedWarning',
    'CostNotFoundWarning',
    'MessageHistoryMutatedWarning',
    'PydanticAIDeprecationWarning',
    'ThreadlineDeprecationWarning',
    'UnsupportedSettingWarning',
    'UsageExtractionFailedWarning',
    'UsageLimitUnavailableWarning',
    'SuspendedResponseExpired',
    'TransportPhase',
    'ConcurrencyLimitExceeded',
    'RunTimedOut',
    'ModelRequestTimeout',
    'ContentFilterError',
    'IncompleteToolCall',
    'SkipModelRequest',
    'SkipToolExecution',
    'SkipToolValidation',
    'ModelNotFoundError',
    'ModelAuthenticationError',
    'ModelContextWindowExceededError',
    'ModelRequestRejectedError',
    'ModelServerError',
    'ModelOverloadedError',
    'ModelUnavailableError',
    'ModelQuotaExceededError',
    'ModelRateLimitError',
    'ModelTimeoutError',
    'DemoFailed',
    'HTTPProblem',
    'HookTimeoutError',
    'MissingAPIKey',
    'RunCancelled',
    'SearchQueryTooLarge',
    'ToolArgsError',
    'TurnBusy',
    'UnknownMediaType',
    'UnknownModel',
    'WouldWait',
    'ToolFailed',
    'AgentRunError',
    'ApprovalRequired',
    'BackendError',
    'CallDeferred',
    'ConflictError',
    'ConversationNotFound',
    'ConversationQuarantined',
    'CorruptRecordError',
    'FallbackExceptionGroup',
    'MessageValidationError',
    'ModelAPIError',
    'ModelConnectionError',
    'ModelHTTPError',
    'ModelRetry',
    'RunNotFound',
    'StoreError',
    'ThreadlineError',
    'UndrainedPendingMessagesError',
    'UnexpectedModelBehavior',
    'UnresolvedToolEffect',
    'UsageLimitExceeded',
    'UserError',
]

from threadline.exceptions._base import (
    AgentRunError,
    ApprovalRequired,
    CallDeferred,
    MessageValidationError,
    ModelRetry,
    SkipModelRequest,
    SkipToolExecution,
    SkipToolValidation,
    ThreadlineError,
    ToolFailed,
    UserError,
)
from threadline.exceptions._model import (
    HTTPErrorCategory as HTTPErrorCategory,  # for models._http_errors
)
from threadline.exceptions._model import (
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelNotFoundError,
    ModelOverloadedError,
    ModelQuotaExceededError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelRequestTimeout,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
    TransportPhase,
)
from threadline.exceptions._model import (
    http_error_for as http_error_for,
)
from threadline.exceptions._warnings import (
    CostCalculationFailedWarning,
    CostNotFoundWarning,
    MessageHistoryMutatedWarning,
    PydanticAIDeprecationWarning,
    ThreadlineDeprecationWarning,
    UnsupportedSettingWarning,
    UsageExtractionFailedWarning,
    UsageLimitUnavailableWarning,
)


class FallbackExceptionGroup(ExceptionGroup[Exception], AgentRunError):
    """Every model of a `FallbackModel` failed; `exceptions` holds each attempt's error, in order."""


class UsageLimitExceeded(AgentRunError):
    """A `UsageLimits` limit would be or was exceeded; `limit` names it, `value` is the count reached."""

    def __init__(self, message: str, *, limit: str = '', value: object = None) -> None:
        self.limit = limit
        self.value = value
        super().__init__(message)


class ConcurrencyLimitExceeded(AgentRunError):
    """A run or a model request would wait in a concurrency limiter's queue longer than its
    `max_queued` allows (`Agent(max_concurrency=...)`, `ConcurrencyLimitedModel`)."""


class UnexpectedModelBehavior(AgentRunError):
    """The model did something the run cannot continue from (too many retries, an unusable response)."""

    def __init__(self, message: str, body: str | None = None) -> None:
        self.message = message
        self.body = body
        super().__init__(message if body is None else f'{message}, body:\n{body}')


class ContentFilterError(UnexpectedModelBehavior):
    """The provider's content filter stopped the answer before it had any output (its finish
    reason is `content_filter`); `body` is the response as JSON. Unlike pydantic-ai's, the
    message leaves the body out: it holds what the model said, and messages reach logs."""

    def __init__(self, message: str, body: str | None = None) -> None:
        super().__init__(message)
        self.body = body


class IncompleteToolCall(UnexpectedModelBehavior):
    """The output retries ran out on a response the token limit cut short inside a tool call's
    arguments: asking again would only be cut short again."""


class StoreError(ThreadlineError):
    """A conversation or step store could not do what was asked; stored data is left as it was."""

    def __init__(self, message: str, *, conversation_id: str | None = None, position: int | None = None) -> None:
        self.conversation_id = conversation_id
        self.position = position
        super().__init__(message)


class ConversationNotFound(StoreError, LookupError):
    """No such conversation in this scope (a conversation of another scope is reported the same way)."""


class RunNotFound(StoreError, LookupError):
    """No run with this id in this conversation and scope (a run of another scope is reported the same way)."""


class ConversationQuarantined(StoreError):
    """The conversation is quarantined (an audit refused it): no run or append until it is released
    with `threadline.audit.release_quarantine`."""


class ConflictError(StoreError):
    """The conversation changed since the revision the caller read; nothing was written. Reload and retry."""

    def __init__(
        self,
        message: str,
        *,
        conversation_id: str | None = None,
        expected: int | None = None,
        actual: int | None = None,
    ) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(message, conversation_id=conversation_id)


class CorruptRecordError(StoreError):
    """A stored row could not be read back (damaged, or written by a newer version)."""


class BackendError(StoreError):
    """The database failed (down, locked, disk full); the operation was rolled back."""


class UnresolvedToolEffect(UserError):
    """A tool call started before a crash and its effect is unknown: running over this history could
    make the effect twice. Check the destination, then `reconcile_tool_call`, or opt out."""


class UndrainedPendingMessagesError(UserError):
    """Kept so `except UndrainedPendingMessagesError` keeps working; never raised. Every way of
    driving a run (`run`, `AgentRun.next`, a bare `async for`) delivers queued messages before the
    run may end, so none can be left behind."""


class HTTPProblem(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class TurnBusy(Exception):
    """Another server is answering this conversation and did not finish within the wait."""


class ToolArgsError(Exception):
    """The model's arguments did not validate; `errors` is the list sent back to it."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        # `loc` as a list, as the reference keeps it (it is a JSON array on the wire either way).
        self.errors = [{**e, 'loc': list(e['loc'])} if isinstance(e.get('loc'), tuple) else e for e in errors]
        super().__init__(str(errors))


_Message: TypeAlias = Any
"""A `ModelMessage` (typed loosely: messages come after exceptions in the package order)."""


class RunCancelled(AgentRunError):
    """The application stopped the run: `AgentRun.cancel()`, `RunContext.cancel()`, a `timeout=`
    (`RunTimedOut`), or a cancelled stream. What the run completed is kept: `all_messages()` is a
    history to resume from (`new_messages()` this run's part of it), with the run's `usage`,
    `run_id`, `conversation_id` and `metadata`."""

    def __init__(
        self,
        message: str,
        *,
        messages: Sequence[_Message] = (),
        new_message_index: int = 0,
        usage: object = None,
        metadata: dict[str, Any] | None = None,
        run_id: str | None = None,
        conversation_id: str | None = None,
        dump_json: Callable[[list[_Message]], bytes] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self._messages, self._new_message_index = list(messages), new_message_index
        self.usage, self.metadata, self.run_id, self.conversation_id = usage, metadata, run_id, conversation_id
        self._dump_json = dump_json

    def all_messages(self) -> list[_Message]:
        return list(self._messages)

    def new_messages(self) -> list[_Message]:
        return self._messages[self._new_message_index :]

    def all_messages_json(self) -> bytes:
        return self._json(self.all_messages())

    def new_messages_json(self) -> bytes:
        return self._json(self.new_messages())

    @property
    def response(self) -> _Message:
        """The last model response the run recorded (a `ModelResponse`)."""
        for message in reversed(self._messages):
            if getattr(message, 'kind', None) == 'response':
                return message
        raise ValueError('the run was cancelled before the model answered: there is no response')

    def _json(self, messages: list[_Message]) -> bytes:
        if self._dump_json is None:
            raise ValueError('this RunCancelled was made without its history: it has no JSON form')
        return self._dump_json(messages)

    def __reduce__(self) -> tuple[object, ...]:
        facts = {'messages': self._messages, 'new_message_index': self._new_message_index, 'usage': self.usage}
        facts |= {'metadata': self.metadata, 'run_id': self.run_id, 'conversation_id': self.conversation_id}
        return (_rebuilt, (type(self), self.message, facts))


class RunTimedOut(RunCancelled, TimeoutError):
    """The run did not finish before its deadline (`timeout=` on the run, or the deadline of the
    run that started it from a tool): stopped as `RunCancelled` is, with what it completed."""


def _rebuilt(cls: type[RunCancelled], message: str, facts: dict[str, Any]) -> RunCancelled:
    return cls(message, **facts)


class HookTimeoutError(AgentRunError, TimeoutError):
    """A hook function registered with `timeout=` took longer (`hook_name`, `func_name` and
    `timeout` say which, as pydantic-ai's error does)."""

    def __init__(self, hook_name: str, func_name: str, timeout: float) -> None:
        self.hook_name, self.func_name, self.timeout = hook_name, func_name, timeout
        super().__init__(f'Hook {hook_name!r} function {func_name!r} timed out after {timeout}s')


class UnknownModel(UserError):
    """`infer_model` was given a name it does not know (`name` says which)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f'Unknown model: {name}. Use a Model instance, "test", or "openai:<model>" / "anthropic:<model>" / '
            '"google:<model>".'
        )


class SearchQueryTooLarge(UserError):
    """A search query past one of the bounds that keep every search cheap (too many terms, CJK
    characters or emoji; see `storage.index`), or one whose search ran out of its time budget."""


class MissingAPIKey(UserError):
    """A provider was made without a key and its environment variable is unset; `provider` and
    `variable` let a front end (the CLI) say how to give one in its own terms."""

    def __init__(self, provider: str, variable: str) -> None:
        self.provider, self.variable = provider, variable
        super().__init__(f'the {provider} provider needs an API key: set {variable}, or pass api_key= to the provider')


class WouldWait(Exception):
    """Raised by a backend operation run in the event loop (`AsyncStore._uncontended`) that would
    have to wait for another thread or process. It is raised before anything is written, so the
    operation is simply run again in a worker thread, where waiting is fine."""


class SuspendedResponseExpired(AgentRunError):
    """A suspended response (a provider's background job) is no longer held by the provider, so it
    cannot be resumed: run again from the messages before it. Threadline has no background-mode
    requests yet; the class is here for code that catches it."""


class DemoFailed(Exception):
    """A demo step did not do what it says."""


class UnknownMediaType(ValueError, KeyError):
    """A media type with no format name for its kind of content."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ''


for _name in __all__:  # every class reports the path users import it from, not a private module
    _value = globals()[_name]
    if isinstance(_value, type) and _value.__module__.startswith('threadline.exceptions.'):
        _value.__module__ = __name__
