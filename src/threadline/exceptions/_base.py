"""The roots of the hierarchy and the exceptions that steer control flow (see the package docstring)."""

from __future__ import annotations

from typing import Any

__all__ = [
    'ThreadlineError',
    'UserError',
    'MessageValidationError',
    'ModelRetry',
    'ToolFailed',
    'ApprovalRequired',
    'CallDeferred',
    'SkipModelRequest',
    'SkipToolValidation',
    'SkipToolExecution',
    'AgentRunError',
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


class SkipModelRequest(Exception):
    """Raised by a `before_model_request` or `wrap_model_request` hook: `response` is recorded as
    the model's answer, and the model is not asked (nor do `after_model_request` hooks run)."""

    def __init__(self, response: Any) -> None:
        # A `ModelResponse`: typed loosely, as messages come after exceptions in the package order.
        self.response = response
        super().__init__()

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return self.__class__, (self.response,)


class SkipToolValidation(Exception):
    """Raised by a `before_tool_validate` or `wrap_tool_validate` hook: `validated_args` are the
    call's arguments, and neither the schema nor `after_tool_validate` hooks see them."""

    def __init__(self, validated_args: dict[str, Any]) -> None:
        self.validated_args = validated_args
        super().__init__()

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return self.__class__, (self.validated_args,)


class SkipToolExecution(Exception):
    """Raised by a `before_tool_execute` or `wrap_tool_execute` hook (or the tool): `result` is
    the call's result, and the tool does not run (nor do `after_tool_execute` hooks)."""

    def __init__(self, result: Any) -> None:
        self.result = result
        super().__init__()

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return self.__class__, (self.result,)


class AgentRunError(ThreadlineError, RuntimeError):
    """A run could not finish."""
