"""`DynamicCapability`: a capability chosen per run by a function of the `RunContext`
(pydantic-ai 2.62's; public at `threadline.capabilities`).

Rules:
- the function (sync or async) runs once per run, when the run starts (`for_run`); what it
  returns is adapted to the agent (`for_agent`) and to the run (`for_run`) and stands in for the
  `DynamicCapability` for that run: its hooks, instructions and tools take part as any
  capability's do; None leaves the run without it;
- a plain function given in `capabilities=` (the agent's or a run's) is wrapped in one;
- the capability the function returns decides its own loading (`defer_loading`), as its own.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeAlias

from threadline.agent._capability import AbstractCapability
from threadline.agent._context import AgentDepsT, RunContext
from threadline.exceptions import UserError

if TYPE_CHECKING:
    from threadline.agent._agent import Agent

__all__ = ['CapabilityFunc', 'DynamicCapability', 'wrap_capability_funcs']

CapabilityFunc: TypeAlias = Callable[
    [RunContext[AgentDepsT]],
    'AbstractCapability[AgentDepsT] | Awaitable[AbstractCapability[AgentDepsT] | None] | None',
]
"""A function of the run context that returns the capability for this run (or None)."""


class DynamicCapability(AbstractCapability[AgentDepsT]):
    """A capability built for each run by `capability_func` (see the module rules)."""

    def __init__(self, capability_func: CapabilityFunc[AgentDepsT], *, id: str | None = None) -> None:
        self.capability_func = capability_func
        self.id = id
        self._agent: Agent[AgentDepsT, object] | None = None

    def for_agent(self, agent: Agent[AgentDepsT, object]) -> AbstractCapability[AgentDepsT]:
        self._agent = agent
        return self

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractCapability[AgentDepsT]:
        made = self.capability_func(ctx)
        if inspect.isawaitable(made):
            made = await made
        if made is None:
            return self
        if not isinstance(made, AbstractCapability):
            raise UserError(
                f'the function of a DynamicCapability returned {type(made).__name__}: return a capability or None'
            )
        agent = self._agent or ctx.agent
        adapted = made.for_agent(agent) if agent is not None else made
        return await adapted.for_run(ctx)


def wrap_capability_funcs(
    capabilities: Sequence[AbstractCapability[AgentDepsT] | CapabilityFunc[AgentDepsT]] | None,
) -> list[AbstractCapability[AgentDepsT]]:
    """`capabilities` (None: none) with each plain function wrapped in a `DynamicCapability`."""
    return [c if isinstance(c, AbstractCapability) else DynamicCapability(c) for c in capabilities or ()]
