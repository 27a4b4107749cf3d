"""Run metadata: what an application attaches to each run (`Agent(metadata=)`, `run(metadata=)`),
kept on `RunContext.metadata` and on the result, as pydantic-ai 2.62 has it.

Rules:
- each is a dict, or a function of the `RunContext` that returns one (or None);
- the run's is merged over the agent's (its keys win); with neither, the result's is None;
- it is resolved when the run starts (so capabilities, toolsets and tools see it) and again when
  it ends, from the final state, for the result; a function should be a pure mapping of the
  context, as it is called more than once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from threadline.agent._context import RunContext

__all__ = ['AgentMetadata', 'resolve_metadata']

AgentMetadata: TypeAlias = 'Mapping[str, object] | Callable[[RunContext[Any]], Mapping[str, object] | None]'
"""A run's metadata, or a function of the run context that gives it."""


def resolve_metadata(
    agent: AgentMetadata | None, run: AgentMetadata | None, ctx: RunContext[Any]
) -> dict[str, object] | None:
    """The run's metadata over the agent's, each resolved with `ctx` (see the module rules)."""
    base, own = _resolved(agent, ctx), _resolved(run, ctx)
    if base and own:
        return {**base, **own}
    return own or base


def _resolved(given: AgentMetadata | None, ctx: RunContext[Any]) -> dict[str, object] | None:
    if given is None:
        return None
    value = given(ctx) if callable(given) else given
    return None if value is None else dict(value)
