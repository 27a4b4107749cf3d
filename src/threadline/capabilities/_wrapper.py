"""`WrapperCapability`: a capability that hands everything to another, so a subclass can change
one hook of an existing capability (pydantic-ai 2.62's).

Rules:
- every hook (the wrappers and `get_model` too), `get_toolset()` and `get_instructions()` go
  to `wrapped`; a subclass overrides the ones it changes and calls `super()` to reach `wrapped`;
- the chain calls the hooks `wrapped` implements plus those the subclass overrides, no others;
- it takes `wrapped`'s `id`, `description` and `defer_loading`, so a deferred capability stays
  deferred when wrapped;
- `for_agent` / `for_run` adapt `wrapped` and keep the wrapper around what they return.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterable, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from threadline.agent.capability import (
    HOOKS,
    PROVIDERS,
    AbstractCapability,
    CapabilityDepsT,
    CapabilityInstructions,
    ModelSelector,
)
from threadline.messages import AgentStreamEvent
from threadline.models import Model, ModelSettings

if TYPE_CHECKING:
    from threadline.agent import Agent, RunContext
    from threadline.agent.tools import AbstractToolset

__all__ = ['WrapperCapability']


class WrapperCapability(AbstractCapability[CapabilityDepsT]):
    """`wrapped` with the hooks a subclass overrides changed (see the module rules)."""

    def __init__(self, wrapped: AbstractCapability[CapabilityDepsT]) -> None:
        self.wrapped = wrapped
        self.id, self.description = wrapped.id, wrapped.description
        self.defer_loading = wrapped.defer_loading
        self.streams_in_model_request = wrapped.streams_in_model_request

    def get_toolset(self) -> AbstractToolset[CapabilityDepsT] | None:
        return self.wrapped.get_toolset()

    def get_instructions(self) -> CapabilityInstructions | None:
        return self.wrapped.get_instructions()

    def get_model(self) -> Model | str | ModelSelector[CapabilityDepsT] | None:
        return self.wrapped.get_model()

    def get_model_settings(
        self,
    ) -> ModelSettings | Callable[[RunContext[CapabilityDepsT]], ModelSettings] | None:
        return self.wrapped.get_model_settings()

    def get_wrapper_toolset(self, toolset: AbstractToolset[CapabilityDepsT]) -> AbstractToolset[CapabilityDepsT] | None:
        return self.wrapped.get_wrapper_toolset(toolset)

    def get_wrapper_model(self, model: Model) -> Model | None:
        return self.wrapped.get_wrapper_model(model)

    def wrap_run_event_stream(
        self, ctx: RunContext[CapabilityDepsT], *, stream: AsyncIterable[AgentStreamEvent]
    ) -> AsyncIterable[AgentStreamEvent]:
        return self.wrapped.wrap_run_event_stream(ctx, stream=stream)

    def overridden_hooks(self) -> frozenset[str]:
        own = frozenset(
            name for name in (*HOOKS, *PROVIDERS) if getattr(type(self), name) is not getattr(WrapperCapability, name)
        )
        return self.wrapped.overridden_hooks() | own

    def for_agent(self, agent: Agent[Any, Any]) -> AbstractCapability[CapabilityDepsT]:
        return self._around(self.wrapped.for_agent(agent))

    async def for_run(self, ctx: RunContext[CapabilityDepsT]) -> AbstractCapability[CapabilityDepsT]:
        return self._around(await self.wrapped.for_run(ctx))

    def _around(self, adapted: AbstractCapability[CapabilityDepsT]) -> WrapperCapability[CapabilityDepsT]:
        if adapted is self.wrapped:
            return self
        again = copy.copy(self)
        again.wrapped = adapted
        return again


def _handing_on(name: str) -> Callable[..., Awaitable[object]]:
    async def hook(self: WrapperCapability[object], *args: object, **kwargs: object) -> object:
        return await getattr(self.wrapped, name)(*args, **kwargs)

    hook.__name__ = hook.__qualname__ = name
    hook.__doc__ = f'`{name}` of the wrapped capability.'
    return hook


for _name in HOOKS:  # one definition for every awaited hook: each hands its call to `wrapped`
    setattr(WrapperCapability, _name, _handing_on(_name))
