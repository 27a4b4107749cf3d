"""`RunContext`: what tools, hooks and processors see of the run they are part of."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar  # PEP 696 defaults (3.13 has them in typing)

from threadline._uuid import uuid7
from threadline.agent._cancel import RunCancellation
from threadline.exceptions import UserError
from threadline.messages import ModelMessage, RepairEvent, RunUsage, UserContent
from threadline.models import Model
from threadline.models.budget import context_tokens, context_window_fraction

if TYPE_CHECKING:
    from threadline.agent._agent import Agent

__all__ = ['AgentDepsT', 'CrashRetry', 'RunContext']

AgentDepsT = TypeVar('AgentDepsT', default=None)


@dataclass(frozen=True)
class CrashRetry:
    """A tool call running again after a crash: `idempotency_key` is the same on every attempt of
    the call, so the tool can look up whether its effect happened before repeating it."""

    idempotency_key: str


@dataclass
class RunContext(Generic[AgentDepsT]):
    """The run as a tool, capability hook or history processor sees it.

    `messages` is the run's live history (replace messages rather than mutating them);
    `usage` is the usage the run's limits see (the conversation total when `usage=` was given);
    `tool_call_id`, `tool_name` and `retry` describe the tool call being executed, if any.
    """

    deps: AgentDepsT
    model: Model
    usage: RunUsage
    prompt: str | Sequence[UserContent] | None = None
    messages: list[ModelMessage] = field(default_factory=list)
    run_id: str = field(default_factory=uuid7)
    """A context built by hand (to test a tool) gets fresh ids, where the reference leaves None:
    everything keyed on a run (capabilities, step persistence) can rely on one."""
    conversation_id: str = field(default_factory=uuid7)
    agent: Agent[Any, Any] | None = None
    run_step: int = 0
    tool_call_id: str | None = None
    tool_name: str | None = None
    retry: int = 0
    max_retries: int = 0
    tool_call_approved: bool = False
    tool_call_metadata: Any = None
    """What the application attached to this call when it resumed it
    (`DeferredToolResults.metadata`), if anything."""
    retries: dict[str, int] = field(default_factory=dict)
    partial_output: bool = False
    """True while a streamed output is still arriving (`stream_output()`, `stream_text()`):
    output functions, hooks and validators then see an incomplete value and should not act on it."""
    metadata: dict[str, Any] = field(default_factory=dict)
    repair_events: list[RepairEvent] = field(default_factory=list)
    """What repairing the given history at run start changed (`RepairEvent`s), for audit records."""
    queue: Any = field(default=None, repr=False)
    _cancellation: RunCancellation | None = field(default=None, repr=False)
    crash_retry: CrashRetry | None = None
    """Set for a tool call that runs again because the process running it died (a durability
    capability, `threadline.durable`, knows): look the effect up by its key before repeating it."""

    def cancel(self) -> None:
        """Stop the run this context belongs to: the caller gets `RunCancelled` with what the run
        completed (see `AgentRun.cancel`)."""
        if self._cancellation is None:
            raise UserError('this RunContext was built outside a run: there is no run to cancel')
        self._cancellation.cancel()

    @property
    def deadline(self) -> datetime | None:
        """When the run must end (its `timeout=`, or a sooner deadline of the run that started
        it), as a UTC time; None without one."""
        return self._cancellation.wall_deadline if self._cancellation is not None else None

    @property
    def context_tokens(self) -> int | None:
        """The tokens the next request will carry: the last response's reported input and output
        tokens plus an estimate of what the history gained since (see `models.budget`); None
        before the first response or when that response reported no usage."""

        return context_tokens(self.messages)

    @property
    def context_window_used(self) -> float | None:
        """`context_tokens` as a share of the model's `context_window` (a `FallbackModel`: the
        smallest of its models'); None when either is unknown, never a misleading 0.0. Use it to
        compact a history before it overflows (see `CompactWhenFull`)."""

        return context_window_fraction(self.messages, self.model.context_window)

    def enqueue(self, *items: Any, priority: str = 'asap') -> str | None:
        """Inject content into this run (see `threadline.agent._enqueue` for the delivery rules);
        returns the enqueue id, or None for an empty call. From inside a tool, parts-only content
        lands right after the tool's result."""

        if self.queue is None:
            raise UserError('enqueue needs a RunContext of a running agent (this one has no queue)')
        return self.queue.put(items, priority=priority, tool_call_id=self.tool_call_id)  # type: ignore[no-any-return]

    def for_tool(
        self,
        *,
        tool_name: str,
        tool_call_id: str,
        retry: int,
        max_retries: int,
        approved: bool,
        metadata: Any = None,
    ) -> RunContext[AgentDepsT]:
        """A copy describing one tool call (the history and usage stay shared)."""
        return replace(
            self,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            retry=retry,
            max_retries=max_retries,
            tool_call_approved=approved,
            tool_call_metadata=metadata,
        )
