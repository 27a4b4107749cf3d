"""What a run's capabilities give it besides hooks: instructions, tools, the tools each step
offers, wrappers around its toolset and model, and the event stream a consumer reads.

`CapabilityChain` inherits this; the lifecycle hooks are in `_chain.py`. Rules:
- `prepare_tools` / `prepare_output_tools` run in the chain's order, each on what the previous
  returned; the result may drop or change definitions but not add or rename one, and None is
  refused (both a `UserError` naming the capability);
- `get_wrapper_toolset` / `get_wrapper_model` wrap inside out, so the first capability's wrapper
  is outermost (as `wrap_*` hooks nest); a capability answering None is skipped;
- the event stream: each event goes to every `on_event` hook in the chain's order before it is
  read, and `wrap_run_event_stream` wrappers enclose that, the first capability's outermost;
  closing the read stream closes every layer, innermost last.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, aclosing
from typing import TYPE_CHECKING, Any, Generic, cast

from threadline.agent._capability import AbstractCapability
from threadline.agent._chain_tools import function_toolsets, instruction_toolsets, step_toolsets
from threadline.agent._context import AgentDepsT
from threadline.agent.tools._load import catalog
from threadline.agent.tools._toolsets import checked_tool_defs
from threadline.messages import AgentStreamEvent
from threadline.models import Model, ModelSettings, ToolDefinition

if TYPE_CHECKING:
    from threadline.agent._context import RunContext
    from threadline.agent.tools._function import FunctionToolset
    from threadline.agent.tools._toolsets import AbstractToolset

__all__ = ['ChainGives']


class ChainGives(Generic[AgentDepsT]):
    """The contributions of a chain's capabilities (see the module rules)."""

    _all: tuple[AbstractCapability[AgentDepsT], ...]
    _forward: tuple[AbstractCapability[AgentDepsT], ...]
    _hooked: dict[str, tuple[AbstractCapability[AgentDepsT], ...]]
    deferred: dict[str, AbstractCapability[AgentDepsT]]

    def hooked(self, hook: str) -> tuple[AbstractCapability[AgentDepsT], ...]:
        """The active capabilities that implement `hook`, in the chain's order."""
        return self._hooked[hook]

    def model_settings(self) -> list[ModelSettings | Callable[[RunContext[AgentDepsT]], ModelSettings]]:
        """Each active capability's model settings (dicts, and functions asked per request), in order."""
        given = [c.get_model_settings() for c in self._forward if 'get_model_settings' in c.overridden_hooks()]
        return [g for g in given if g]

    def instructions(self) -> list[str | Callable[..., Any]]:
        """The deferred-capability catalog, then each active capability's instructions (strings,
        and functions the run renders before each request)."""

        sources: list[str | Callable[..., Any]] = [catalog(self.deferred)] if self.deferred else []
        for capability in self._forward:
            given = capability.get_instructions()
            if given is None or isinstance(given, str) or callable(given):
                sources.extend([given] if given else [])
            else:
                sources.extend(given)
        return sources

    def toolsets(self) -> list[tuple[str, FunctionToolset[AgentDepsT]]]:
        """Each capability's function tools, named by the capability that gives them (see
        `_chain_tools.function_toolsets`)."""
        return function_toolsets(self._all, self.deferred)

    def step_toolsets(self) -> list[AbstractToolset[AgentDepsT]]:
        """The capabilities' other toolsets, asked for tools at each step (see `_chain_tools`)."""
        return step_toolsets(self._all)

    def instruction_toolsets(self) -> list[AbstractToolset[AgentDepsT]]:
        """The capabilities' toolsets whose instructions join the run's (see `_chain_tools`)."""
        return instruction_toolsets(self._all)

    async def prepare_tools(
        self, ctx: RunContext[AgentDepsT], tool_defs: list[ToolDefinition], *, output: bool = False
    ) -> list[ToolDefinition]:
        """The function tools (`output`: the output tools) this step offers, as the capabilities'
        `prepare_tools` (`prepare_output_tools`) hooks leave them."""
        hook = 'prepare_output_tools' if output else 'prepare_tools'
        known = {d.name for d in tool_defs}
        for capability in self._hooked[hook]:
            given = await getattr(capability, hook)(ctx, tool_defs)
            tool_defs = checked_tool_defs(given, known, f'{type(capability).__name__}.{hook}')
        return tool_defs

    def wrap_toolset(self, toolset: AbstractToolset[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        """`toolset` inside each capability's `get_wrapper_toolset` (the first outermost)."""
        for capability in reversed(self._hooked['get_wrapper_toolset']):
            toolset = capability.get_wrapper_toolset(toolset) or toolset
        return toolset

    def wrap_model(self, model: Model) -> Model:
        """`model` inside each capability's `get_wrapper_model` (the first outermost)."""
        for capability in reversed(self._hooked['get_wrapper_model']):
            model = capability.get_wrapper_model(model) or model
        return model

    def hears_events(self) -> bool:
        """Whether an active capability reads the run's events (`on_event`, `wrap_run_event_stream`):
        the run then streams even without an event handler."""
        return bool(self._hooked['on_event'] or self._hooked['wrap_run_event_stream'])

    def event_stream(
        self, ctx: RunContext[AgentDepsT], stream: AsyncIterable[AgentStreamEvent]
    ) -> AsyncGenerator[AgentStreamEvent]:
        """`stream` as the consumer reads it: heard by `on_event`, then through the wrappers."""
        wrapped: AsyncIterable[AgentStreamEvent] = _heard(self._hooked['on_event'], ctx, stream)
        for capability in reversed(self._hooked['wrap_run_event_stream']):
            wrapped = capability.wrap_run_event_stream(ctx, stream=wrapped)
        return _closing(wrapped)


async def _heard(
    listeners: Sequence[AbstractCapability[Any]], ctx: RunContext[Any], stream: AsyncIterable[AgentStreamEvent]
) -> AsyncIterator[AgentStreamEvent]:
    async with _aclosing(stream):
        async for event in stream:
            for capability in listeners:
                await capability.on_event(ctx, event=event)
            yield event


async def _closing(stream: AsyncIterable[AgentStreamEvent]) -> AsyncGenerator[AgentStreamEvent]:
    async with _aclosing(stream):
        async for event in stream:
            yield event


def _aclosing(stream: AsyncIterable[AgentStreamEvent]) -> AbstractAsyncContextManager[object]:
    """Close `stream` (and what it reads) when the reader stops, if it can be closed."""
    closer = stream if hasattr(stream, 'aclose') else _NoClose()
    return aclosing(cast('_NoClose', closer))  # either has `aclose()`


class _NoClose:
    async def aclose(self) -> None:
        return None
