"""`RunContext`: what tools, hooks and processors see of the run they are part of."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..messages import ModelMessage, RunUsage, UserContent
from ..models import Model

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ['AgentDepsT', 'RunContext']

AgentDepsT = TypeVar('AgentDepsT')


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
    prompt: str | Sequence[UserContent] | None
    messages: list[ModelMessage]
    run_id: str
    conversation_id: str
    agent: Agent[Any, Any] | None = None
    run_step: int = 0
    tool_call_id: str | None = None
    tool_name: str | None = None
    retry: int = 0
    max_retries: int = 0
    tool_call_approved: bool = False
    retries: dict[str, int] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    repair_events: list[Any] = field(default_factory=list)
    """What repairing the given history at run start changed (`RepairEvent`s), for audit records."""

    def for_tool(
        self, *, tool_name: str, tool_call_id: str, retry: int, max_retries: int, approved: bool
    ) -> RunContext[AgentDepsT]:
        """A copy describing one tool call (the history and usage stay shared)."""
        return RunContext(
            deps=self.deps,
            model=self.model,
            usage=self.usage,
            prompt=self.prompt,
            messages=self.messages,
            run_id=self.run_id,
            conversation_id=self.conversation_id,
            agent=self.agent,
            run_step=self.run_step,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            retry=retry,
            max_retries=max_retries,
            tool_call_approved=approved,
            retries=self.retries,
            metadata=self.metadata,
        )
