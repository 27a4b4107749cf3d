"""The mutable state of one run, shared by its nodes, and the capability chain runners."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from threadline.agent._chain import CapabilityChain
from threadline.agent._context import RunContext
from threadline.agent._enqueue import EnqueueQueue
from threadline.agent._limits import UsageLimits
from threadline.agent._metadata import AgentMetadata
from threadline.agent.output._deferred_types import DeferredToolResults
from threadline.agent.output._output import OutputSpec
from threadline.agent.tools._load import loaded_capabilities
from threadline.agent.tools._reveal import visible
from threadline.agent.tools._tool import Tool
from threadline.agent.tools._toolsets import AbstractToolset, CombinedToolset, StepTools, tool_of
from threadline.exceptions import UserError
from threadline.messages import (
    AgentStreamEvent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RepairEvent,
    RunUsage,
    SystemPromptPart,
    UserContent,
)
from threadline.models import Model, ModelRequestParameters, ModelSettings, PreparedHistory, ToolDefinition

if TYPE_CHECKING:
    from threadline.agent._agent import Agent

__all__ = ['RunState', 'now_utc']


def now_utc() -> datetime:
    return datetime.now(tz=UTC)


InstructionSource = str | Callable[..., Any]
AnyToolset: TypeAlias = AbstractToolset[Any]
SettingsLayer: TypeAlias = ModelSettings | Callable[[RunContext[Any]], ModelSettings | None] | None
"""A toolset of the run (its deps type is the agent's, which the state does not know)."""


@dataclass
class RunState:
    """Everything a run's nodes read and write. `history` is `ctx.messages` (one list)."""

    agent: Agent[Any, Any]
    model: Model
    ctx: RunContext[Any]
    run_usage: RunUsage
    limits: UsageLimits
    settings: ModelSettings | None
    output: OutputSpec
    tools: dict[str, Tool[Any]]
    capabilities: CapabilityChain[Any]
    instruction_sources: Sequence[InstructionSource]
    """The agent's instructions (the capabilities' come from the chain, the run's below)."""
    system_prompt_sources: Sequence[InstructionSource]
    dynamic_system_prompts: dict[str, Callable[..., Any]]
    output_validators: Sequence[Callable[..., Any]]
    max_retries: int
    """The tools' retry budget (and each output tool's default)."""
    max_output_retries: int
    """The output validation budget (see `_run_setup.retry_budgets`)."""
    user_prompt: str | Sequence[UserContent] | None
    deferred_results: DeferredToolResults | None
    new_message_index: int = 0
    output_retries: int = 0
    last_max_tokens: int | None = None
    """The `max_tokens` the last request was sent with, for the errors a cut-short response gives."""
    warned_kinds: set[str] = field(default_factory=set)
    repair_events: list[RepairEvent] = field(default_factory=list)
    queue: EnqueueQueue = field(default_factory=EnqueueQueue)
    prepared: PreparedHistory = field(default_factory=PreparedHistory)
    """The history as last sent, checked and rendered: each request prepares only what is new."""
    events: list[AgentStreamEvent] | None = None
    """Where nodes put stream events (tool calls and results, enqueued deliveries) when a caller
    streams events; None otherwise, so plain runs build no event objects."""

    stream_in_request: Callable[..., Awaitable[ModelResponse]] | None = None
    """Set while an `event_stream_handler` run makes a request under a capability with
    `streams_in_model_request`: sends the request streamed, handing its events to the handler,
    inside whatever `wrap_model_request` encloses (see `_event_handler`)."""
    resumed_request: ModelRequest | None = None
    toolset: AnyToolset | None = None
    """The run's toolsets joined (a `CombinedToolset`), asked for tools before each request; None
    when the run has none."""
    run_instruction_sources: Sequence[InstructionSource] = ()
    """`run(instructions=)`: after the agent's and the capabilities'."""
    own_toolsets: list[AnyToolset] = field(default_factory=list)
    """The agent's `toolsets=` (the capabilities' come from the chain)."""
    run_toolsets: list[AnyToolset] = field(default_factory=list)
    """The run's `toolsets=`."""
    instruction_toolsets: list[AnyToolset] = field(default_factory=list)
    """The toolsets whose instructions join the run's, in order (their per-run instances once
    `toolsets_for_run` ran)."""
    static_tools: dict[str, Tool[Any]] = field(default_factory=dict)
    """The tools that do not change during the run (the agent's and its capabilities')."""
    prepared_tools: list[str] = field(default_factory=list)
    """The static tools with a `prepare` function (reshaped before each request)."""
    step_tools: StepTools[Any] | None = None
    """With capabilities that prepare or wrap the tools: the toolset of this step's own tools,
    which `step_toolset` (the capabilities' `prepare_tools` and wrappers around it) is asked."""
    step_toolset: AnyToolset | None = None
    step_output_tools: list[ToolDefinition] = field(default_factory=list)
    """The output tools offered at this step (the output's, as `prepare_output_tools` hooks leave them)."""
    end_strategy: str = 'graceful'
    """What happens to function tool calls beside an output tool call (see `Agent`)."""
    selects_model: bool = False
    """Whether capabilities' model selectors choose the model before each request (`_model_choice`)."""
    run_settings: SettingsLayer = None
    """`run(model_settings=)`, a dict or a function of the run context."""
    settings_layers: tuple[SettingsLayer, ...] = ()
    """With per-request settings (functions, or a capability's): the layers merged before each
    request, later over earlier; empty when `settings` holds them all."""
    run_metadata: AgentMetadata | None = None
    """`run(metadata=)`, resolved again over the agent's when the run ends (see `_metadata`)."""
    resolved_step: int | None = None
    """The step this run's tools were last resolved for (None: not yet; a resumed history may run
    tools first). A step is resolved once, as pydantic-ai resolves it, even when resolved ahead."""
    typed_tools: bool = False
    """Whether some tool records its calls with a kind (`load_capability`): only then are calls typed."""

    def __post_init__(self) -> None:
        self.step_output_tools = list(self.output.output_tools)
        self.use_tools(self.tools)
        self.typed_tools = bool(self.capabilities.deferred)
        self.refresh_loaded(self.history)

    def use_tools(self, tools: dict[str, Tool[Any]]) -> None:
        """The run's static tools (the agent's and its capabilities'), before any step shapes them."""
        self.tools = self.static_tools = tools
        self.prepared_tools = [name for name, tool in tools.items() if tool.prepare is not None]

    def step_settings(self) -> ModelSettings | None:
        """The model settings of this request: `settings`, or its layers merged with functions
        asked with the run context (pydantic-ai 2.62's order: agent, capabilities, run)."""
        if not self.settings_layers:
            return self.settings
        merged: dict[str, object] = {}
        for layer in self.settings_layers:
            value = layer(self.ctx) if callable(layer) else layer
            merged.update(value or {})
        return merged or None  # type: ignore[return-value]  # ModelSettings is a total=False dict

    async def toolsets_for_run(self) -> None:
        """Each toolset's instance for this run (`for_run`), before any is entered."""
        if self.toolset is not None:
            self._swap_toolset(await self.toolset.for_run(self.ctx))

    def _swap_toolset(self, new: AnyToolset) -> None:
        """`new` as the run's toolset; the instruction toolsets follow the members it replaced."""
        old = self.toolset
        if new is old:
            return
        self.toolset = new
        if isinstance(old, CombinedToolset) and isinstance(new, CombinedToolset):
            swapped = {id(a): b for a, b in zip(old.toolsets, new.toolsets, strict=True)}
            self.instruction_toolsets = [swapped.get(id(t), t) for t in self.instruction_toolsets]

    async def resolve_tools(self, *, ahead: bool = False) -> None:
        """This step's tools: the static ones (shaped by their `prepare`), the toolsets' (see
        `threadline.agent.tools._toolsets`), then as the capabilities' `prepare_tools` hooks and
        toolset wrappers leave them; and this step's output tools (`prepare_output_tools`).

        As pydantic-ai 2.62: the hooks see `ctx.retry` as the output retries used so far and
        `ctx.max_retries` as the budget of their kind (tools' for `prepare_tools`, output's for
        `prepare_output_tools`); `ahead` resolves for the next step (a resumed response's calls,
        run before any request)."""
        step = self.ctx.run_step + ahead
        if self.resolved_step == step:
            return
        self.resolved_step = step
        chain = self.capabilities
        if chain.has('prepare_output_tools'):
            budget = replace(self.ctx, run_step=step, retry=self.output_retries, max_retries=self.max_output_retries)
            self.step_output_tools = await chain.prepare_tools(budget, list(self.output.output_tools), output=True)
        if self.toolset is None and not self.prepared_tools and self.step_tools is None:
            return
        ctx = replace(self.ctx, run_step=step) if ahead else self.ctx
        if self.toolset is not None:
            self._swap_toolset(await self.toolset.for_run_step(ctx))
        tools = await self._gathered_tools(ctx)
        if self.step_tools is not None and self.step_toolset is not None:
            self.step_tools.tools = tools
            ctx = replace(ctx, retry=self.output_retries, max_retries=self.max_retries)
            offered = await self.step_toolset.get_tools(ctx)
            tools = {name: tool_of(name, t, self.step_toolset) for name, t in offered.items()}
        self.tools = tools

    async def _gathered_tools(self, ctx: RunContext[Any]) -> dict[str, Tool[Any]]:
        tools = dict(self.static_tools)
        for name in self.prepared_tools:
            shaped = await tools[name].prepared(ctx)
            if shaped is None:
                del tools[name]
            else:
                tools[name] = shaped
        if self.toolset is not None:
            for name, toolset_tool in (await self.toolset.get_tools(ctx)).items():
                if name in tools:
                    raise UserError(
                        f'{toolset_tool.toolset.label} defines a tool whose name conflicts with a tool of the agent '
                        f'or of a capability: {name!r}. Rename one (toolset.prefixed() or .renamed()).'
                    )
                tools[name] = tool_of(name, toolset_tool, self.toolset)
        return tools

    def refresh_loaded(self, messages: Sequence[ModelMessage]) -> None:
        """Re-derive which deferred capabilities are loaded from `messages` (the history sent or
        about to be): their hooks and instructions follow (see `threadline.agent.tools._load`)."""
        if self.capabilities.deferred:
            self.capabilities.set_loaded(loaded_capabilities(messages))

    @classmethod
    def for_prompts(cls, agent: Agent[Any, Any], ctx: RunContext[Any]) -> RunState:
        """A state that can only render the agent's prompts (for capabilities that need them)."""
        return cls(
            agent=agent,
            model=ctx.model,
            ctx=ctx,
            run_usage=ctx.usage,
            limits=UsageLimits(),
            settings=None,
            output=agent._output,
            tools={},
            capabilities=CapabilityChain(),
            instruction_sources=agent._instructions,
            system_prompt_sources=agent._system_prompts,
            dynamic_system_prompts=agent._dynamic_system_prompts,
            output_validators=(),
            max_retries=0,
            max_output_retries=0,
            user_prompt=None,
            deferred_results=None,
        )

    @property
    def history(self) -> list[ModelMessage]:
        return self.ctx.messages

    def recompute_new_message_index(self) -> None:
        """Find where this run's messages start after a processor rewrote the history.

        A resumed trailing request is prior context: found by identity, else by value (parts,
        timestamp, instructions, metadata); the index is just after it. A replacement of it is
        prior context too (the run's messages then start at its first response). Otherwise the
        run's messages start at the first message carrying this run's id.
        """
        history = self.history
        resumed = self.resumed_request
        if resumed is not None:
            for index in range(len(history) - 1, -1, -1):
                candidate = history[index]
                if candidate is resumed or (
                    isinstance(candidate, ModelRequest)
                    and candidate.parts == resumed.parts
                    and candidate.timestamp == resumed.timestamp
                    and candidate.instructions == resumed.instructions
                    and candidate.metadata == resumed.metadata
                ):
                    self.new_message_index = index + 1
                    return
            # The processor replaced the resumed request: its replacement is still prior context,
            # so the run's messages start at its first response (none yet: after everything).
            run_id = self.ctx.run_id
            self.new_message_index = next(
                (i for i, m in enumerate(history) if isinstance(m, ModelResponse) and m.run_id == run_id), len(history)
            )
            return
        run_id = self.ctx.run_id
        self.new_message_index = next((i for i, m in enumerate(history) if m.run_id == run_id), len(history))

    # -- stamping ---------------------------------------------------------------------------
    def stamp(self, message: ModelMessage) -> ModelMessage:
        """Fill the run's ids into a message the run created (values already set are kept)."""
        if message.run_id is None:
            message.run_id = self.ctx.run_id
        if message.conversation_id is None:
            message.conversation_id = self.ctx.conversation_id
        return message

    def append(self, message: ModelMessage) -> None:
        self.history.append(self.stamp(message))

    def emit(self, event: AgentStreamEvent) -> None:
        if self.events is not None:
            self.events.append(event)

    # -- enqueued content ---------------------------------------------------------------------
    def drain_asap(self) -> bool:
        """Deliver queued 'asap' content before a model request; True if anything was delivered."""
        if not self.queue.asap:
            return False
        self.queue.deliver(self.history, self.stamp, self.events, idle=False)
        return True

    def drain_at_end(self) -> ModelMessage | None:
        """When the run would end: deliver everything queued; the last message delivered (a
        request) is taken back out, to become the request of one more model request. With both
        queues empty the queue closes and None is returned."""
        if self.queue.empty():
            self.queue.closed = True
            return None
        appended = self.queue.deliver(self.history, self.stamp, self.events, idle=True)
        if not appended:
            return None
        last = self.history.pop()
        return last

    # -- instructions and system prompts ----------------------------------------------------
    async def render(self, source: InstructionSource) -> str | None:
        """The text of an instruction or system prompt source for this run (None when empty)."""
        return await self._render(source)

    async def _render(self, source: InstructionSource) -> str | None:
        if isinstance(source, str):
            return source
        value = source(self.ctx) if _wants_ctx(source) else source()
        if inspect.isawaitable(value):
            value = await value
        if isinstance(value, (list, tuple)):  # a toolset's get_instructions may give several
            return '\n\n'.join(str(v) for v in value if v) or None
        return value if value is None else str(value)

    async def instructions(self) -> str | None:
        """The running agent's instructions for this step, joined by blank lines; None if empty.
        What a request stores: `PromptedOutput`'s schema prompt is not among them (it is the
        output's, added to what the model is sent: `request_parameters`), as in the reference.

        Order (pydantic-ai 2.62's): the sources are the agent's, the capabilities', the run's,
        then the toolsets' (the agent's, the capabilities', the run's); every static string among
        them comes first, in that order, then what each instruction function renders, in that
        order (so the stable part leads, for caching)."""
        sources = [
            *self.instruction_sources,
            *self.capabilities.instructions(),
            *self.run_instruction_sources,
            *(source for toolset in self.instruction_toolsets for source in toolset.instruction_sources()),
        ]
        texts: list[str | None] = [source for source in sources if isinstance(source, str)]
        texts.extend([await self._render(source) for source in sources if not isinstance(source, str)])
        joined = '\n\n'.join(t for t in texts if t).strip()
        return joined or None

    async def system_prompt_parts(self) -> list[SystemPromptPart]:
        parts = []
        for source in self.system_prompt_sources:
            text = await self._render(source)
            if text:
                parts.append(SystemPromptPart(text))
        for name, fn in self.dynamic_system_prompts.items():
            # Kept when empty, as pydantic-ai keeps it: a later run may render it with text.
            parts.append(SystemPromptPart(await self._render(fn) or '', dynamic_ref=name))
        return parts

    async def request_parameters(self) -> ModelRequestParameters:

        return ModelRequestParameters(
            function_tools=visible((tool.tool_def for tool in self.tools.values()), self.history),
            output_tools=self.step_output_tools,
            allow_text_output=self.output.allow_text,
            output_mode=self.output.mode,
            output_object=self.output.output_object,
            prompted_output_template=self.output.prompted_template,
            instructions='\n\n'.join(t for t in (await self.instructions(), self.output.template) if t) or None,
        )

    def warn_skipped(self, kinds: set[str]) -> None:
        """One warning per run for each part kind the model cannot be sent."""
        fresh = sorted(kinds - self.warned_kinds)
        if fresh:
            self.warned_kinds.update(fresh)
            warnings.warn(
                f'Skipped part or content kind(s) {fresh} when sending the history to the model: this version '
                'of Threadline does not know them (written by a newer version). They stay in the stored history.',
                UserWarning,
                stacklevel=2,
            )


def _wants_ctx(fn: Callable[..., object]) -> bool:
    try:
        return len(inspect.signature(fn).parameters) >= 1
    except (TypeError, ValueError):
        return False
