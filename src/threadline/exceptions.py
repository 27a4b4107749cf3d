"""The one exception hierarchy of Threadline.

Every error Threadline raises on purpose derives from `ThreadlineError`, so callers can catch the
library's failures without catching their own. Messages name what is wrong, where (message index,
part index, field, conversation) and what to do about it.
"""

from __future__ import annotations

__all__ = [
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


class ThreadlineError(Exception):
    """Base class of every error Threadline raises on purpose."""


class UserError(ThreadlineError, RuntimeError):
    """The caller used the API in a way it does not support; the message says how to fix it."""


class MessageValidationError(ThreadlineError, ValueError):
    """A serialized history could not be loaded.

    `location` is the path of the offending value (`messages[3].parts[1].tool_call_id`), `reason`
    what is wrong with it. Loading is all-or-nothing: when this is raised nothing was returned.
    """

    def __init__(self, location: str, reason: str) -> None:
        self.location = location
        self.reason = reason
        super().__init__(f'{location}: {reason}' if location else reason)


class ModelRetry(Exception):
    """Raise from a tool or output validator to ask the model to try again with `message` as feedback."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class ToolFailed(Exception):
    """Raise from a tool (or its args validator, or a tool hook) when the call is done and failed
    for good: the model sees `message` as a failed result, with no request to try again, and the
    tool's retry count is not touched."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class ApprovalRequired(Exception):
    """Raise from a tool body to ask for a person's approval before it acts: the run ends with the
    call in `DeferredToolRequests.approvals`, and reruns the tool once approved
    (`ctx.tool_call_approved` is then True). Needs `DeferredToolRequests` among the output types."""

    def __init__(self, metadata: dict[str, object] | None = None) -> None:
        self.metadata = metadata
        super().__init__('approval required')


class CallDeferred(Exception):
    """Raise from a tool body to hand the call to something outside the run (a client, a queue):
    the run ends with it in `DeferredToolRequests.calls`; its result comes back with the next run."""

    def __init__(self, metadata: dict[str, object] | None = None) -> None:
        self.metadata = metadata
        super().__init__('call deferred')


class AgentRunError(ThreadlineError, RuntimeError):
    """A run could not finish."""


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
        super().__init__(model_name, f'status_code: {status_code}, model_name: {model_name}, body: {body}')


class ModelConnectionError(ModelAPIError):
    """The provider could not be reached, or did not answer in time (after the SDK's retries)."""


class FallbackExceptionGroup(ExceptionGroup[Exception], AgentRunError):
    """Every model of a `FallbackModel` failed; `exceptions` holds each attempt's error, in order."""


class UsageLimitExceeded(AgentRunError):
    """A `UsageLimits` limit would be or was exceeded; `limit` names it, `value` is the count reached."""

    def __init__(self, message: str, *, limit: str = '', value: object = None) -> None:
        self.limit = limit
        self.value = value
        super().__init__(message)


class UnexpectedModelBehavior(AgentRunError):
    """The model did something the run cannot continue from (too many retries, an unusable response)."""

    def __init__(self, message: str, body: str | None = None) -> None:
        self.message = message
        self.body = body
        super().__init__(message if body is None else f'{message}, body:\n{body}')


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


class UndrainedPendingMessagesError(AgentRunError):
    """Kept so `except UndrainedPendingMessagesError` keeps working; never raised. Every way of
    driving a run (`run`, `AgentRun.next`, a bare `async for`) delivers queued messages before the
    run may end, so none can be left behind."""
