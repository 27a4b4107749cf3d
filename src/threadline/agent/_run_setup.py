"""What a run starts from: the options a run takes, and the `RunState` built from them and the agent.

Rules:
- `Agent.override(...)` wins over the agent and over the call, for what it names (model, deps,
  tools, toolsets, instructions, model settings, retries).
- A run's `instructions=` add to the agent's; its `model_settings=` are laid over the agent's; its
  `capabilities=` and `toolsets=` come after the agent's.
- Each capability's `for_run` instance replaces it before the run starts (and brings its tools).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, TypedDict

from threadline.agent._cancel import RunCancellation
from threadline.agent._capability import AbstractCapability
from threadline.agent._chain import CapabilityChain, flatten
from threadline.agent._context import AgentDepsT, RunContext
from threadline.agent._dynamic_capability import CapabilityFunc, wrap_capability_funcs
from threadline.agent._event_handler import EventStreamHandler
from threadline.agent._limits import UsageLimits
from threadline.agent._metadata import AgentMetadata, resolve_metadata
from threadline.agent._model_choice import UnchosenModel, choose_static, resolve, selectors
from threadline.agent._run_inputs import check_history, resolve_ids, resumed_prompt
from threadline.agent._state import InstructionSource, RunState, SettingsLayer
from threadline.agent.output._deferred_types import DeferredToolResults
from threadline.agent.output._output import OutputSpec
from threadline.agent.tools._dynamic import ToolsetFunc, as_toolset
from threadline.agent.tools._function import merge_tools
from threadline.agent.tools._toolsets import AbstractToolset, CombinedToolset, PreparedToolset, StepTools
from threadline.exceptions import UserError
from threadline.messages import ModelMessage, RunUsage, UserContent
from threadline.models import Model, PreparedHistory, infer_model

if TYPE_CHECKING:
    from threadline.agent._agent import Agent

__all__ = [
    'EndStrategy',
    'InstructionsArg',
    'RunOptions',
    'RunSyncOptions',
    'ToolOptions',
    'as_list',
    'for_run',
    'new_state',
]

EndStrategy = Literal['early', 'graceful', 'exhaustive']
InstructionsArg = str | Callable[..., Any] | Sequence[str | Callable[..., Any]] | None


class RunOptions(TypedDict, Generic[AgentDepsT], total=False):
    """The keyword arguments of `Agent.run`, which `iter`, `run_sync`, `run_stream` and
    `run_stream_events` take as well."""

    message_history: Sequence[ModelMessage] | None
    deferred_tool_results: DeferredToolResults | None
    model: Model | str | None
    deps: AgentDepsT
    model_settings: SettingsLayer
    usage_limits: UsageLimits | None
    usage: RunUsage | None
    instructions: InstructionsArg
    run_id: str | None
    conversation_id: str | None
    capabilities: Sequence[AbstractCapability[Any] | CapabilityFunc[Any]]
    toolsets: Sequence[AbstractToolset[Any] | ToolsetFunc[Any]]
    retries: int | AgentRetries | None
    metadata: AgentMetadata | None
    output_type: object
    timeout: float | None
    """Seconds the whole run may take: past it, `RunTimedOut` (see `_cancel`)."""


class RunSyncOptions(RunOptions[AgentDepsT], total=False):
    """`RunOptions` plus what only a run driven to its end takes."""

    event_stream_handler: EventStreamHandler | None


class AgentRetries(TypedDict, total=False):
    """Retry budgets by kind (`Agent(retries=...)`, `run(retries=...)`): `tools` for tool calls
    (and the default of each output tool), `output` for output validation; an int sets both."""

    tools: int
    output: int


def retry_budgets(*layers: int | AgentRetries | None) -> tuple[int, int]:
    """The (tools, output) budgets: 1 each, then each layer over the previous (an int sets both,
    a dict the kinds it names), as pydantic-ai 2.62 resolves the agent's, the run's and an override's."""
    tools = output = 1
    for layer in layers:
        if layer is None:
            continue
        if isinstance(layer, int):
            tools = output = layer
        else:
            unknown = set(layer) - {'tools', 'output'}
            if unknown:
                raise UserError(f"retries= takes 'tools' and 'output', not {sorted(unknown)}")
            tools, output = layer.get('tools', tools), layer.get('output', output)
    return tools, output


class ToolOptions(TypedDict, total=False):
    """The options of `Agent.tool` / `tool_plain` (see `Tool`)."""

    name: str | None
    description: str | None
    retries: int | None
    requires_approval: bool
    strict: bool | None
    defer_loading: bool
    prepare: Callable[..., Any] | None
    args_validator: Callable[..., Any] | None
    timeout: float | None
    sequential: bool
    metadata: dict[str, Any] | None
    include_return_schema: bool | None
    docstring_format: Literal['google', 'numpy', 'sphinx', 'auto']


def as_list(value: InstructionsArg) -> list[InstructionSource]:
    """An instructions-like argument (None, one item, or several) as a list."""
    if value is None:
        return []
    if isinstance(value, str) or callable(value):
        return [value]
    return list(value)


def new_state(
    agent: Agent[Any, Any],
    user_prompt: str | Sequence[UserContent] | None,
    *,
    message_history: Sequence[ModelMessage] | None = None,
    deferred_tool_results: DeferredToolResults | None = None,
    model: Model | str | None = None,
    deps: Any = None,
    model_settings: SettingsLayer = None,
    usage_limits: UsageLimits | None = None,
    usage: RunUsage | None = None,
    instructions: InstructionsArg = None,
    run_id: str | None = None,
    conversation_id: str | None = None,
    capabilities: Sequence[AbstractCapability[Any] | CapabilityFunc[Any]] = (),
    toolsets: Sequence[AbstractToolset[Any] | ToolsetFunc[Any]] = (),
    retries: int | AgentRetries | None = None,
    metadata: AgentMetadata | None = None,
    output_type: object = None,
    timeout: float | None = None,
) -> RunState:
    """The state of a run of `agent` with these options (see the module docstring)."""
    overridden = agent._overrides.get()
    model = overridden.get('model', model)
    deps = overridden.get('deps', deps)
    # As at the agent's construction, so a run-level capability may adapt itself to the agent.
    run_level = [c.for_agent(agent) for c in wrap_capability_funcs(capabilities)]
    chain = CapabilityChain([*agent.capabilities, *run_level], run_level=len(flatten(run_level)))
    resolved_model, selects = _first_model(agent, chain, model)
    limits = usage_limits or UsageLimits()
    if not isinstance(resolved_model, UnchosenModel):
        limits.check_cost_known(resolved_model)
    history = check_history(message_history)
    run_id, conversation_id = resolve_ids(history, run_id, conversation_id)
    ctx: RunContext[Any] = RunContext(
        deps=deps,
        model=resolved_model,
        usage=usage if usage is not None else RunUsage(),
        prompt=user_prompt if user_prompt is not None else resumed_prompt(history),
        messages=history,
        run_id=run_id,
        conversation_id=conversation_id,
        agent=agent,
        _cancellation=RunCancellation(timeout),
    )
    ctx.metadata = resolve_metadata(agent.metadata, metadata, ctx) or {}
    budgets = retry_budgets(agent.retries, retries, overridden.get('retries'))
    state = RunState(
        agent=agent,
        model=resolved_model,
        ctx=ctx,
        run_usage=RunUsage(),
        limits=limits,
        settings=None,
        output=agent._output if output_type is None else OutputSpec(output_type),
        tools=_tools_of(agent, chain),
        capabilities=chain,
        instruction_sources=as_list(overridden.get('instructions', agent._instructions)),
        run_instruction_sources=as_list(instructions),
        system_prompt_sources=agent._system_prompts,
        dynamic_system_prompts=agent._dynamic_system_prompts,
        output_validators=agent._output_validators,
        max_retries=budgets[0],
        max_output_retries=budgets[1],
        user_prompt=user_prompt,
        deferred_results=deferred_tool_results,
        end_strategy=agent.end_strategy,
        prepared=_prepared_for(agent, history),
        selects_model=selects,
        run_metadata=metadata,
    )
    state.run_settings = model_settings
    _settings(state)
    state.own_toolsets = list(overridden.get('toolsets', agent._toolsets))
    state.run_toolsets = [as_toolset(t) for t in toolsets]
    _step_toolsets(state)
    ctx.queue = state.queue
    return state


def _prepared_for(agent: Agent[Any, Any], history: list[ModelMessage]) -> PreparedHistory:
    """A copy of the prepared history the agent kept at its last run's start, when it opens this
    run's history (a conversation continued on the same agent), else a new one."""
    last = agent._last_prepared
    if last is not None and history and last.opens(history):
        return last.copy()
    return PreparedHistory()


def _first_model(agent: Agent[Any, Any], chain: CapabilityChain[Any], model: Model | str | None) -> tuple[Model, bool]:
    """The model the run starts with (see `_model_choice`: an `UnchosenModel` when capabilities
    resolve its name, or a selector gives the first), and whether selectors choose per request."""
    selects = model is None and bool(selectors(chain))
    chosen = choose_static(chain, model)
    chosen = chosen if chosen is not None else agent.model
    if chosen is None and not selects:
        raise UserError('`model` must either be set on the agent or included when calling it.')
    if chosen is None or (isinstance(chosen, str) and chain.has('resolve_model_id')):
        return UnchosenModel(chosen), selects
    return infer_model(chosen), selects


async def for_run(agent: Agent[Any, Any], state: RunState) -> RunState:
    """`state` with its model resolved (when capabilities resolve model names) and each
    capability's `for_run` instance (and those instances' tools)."""
    unchosen = state.model
    if isinstance(unchosen, UnchosenModel) and unchosen.name is not None:
        state.model = state.ctx.model = await resolve(state.capabilities, agent, state.ctx.deps, unchosen.name)
        state.limits.check_cost_known(state.model)
    chain = await state.capabilities.for_run(state.ctx)
    if chain is not state.capabilities:
        state.capabilities = chain
        state.use_tools(_tools_of(agent, chain))
        _step_toolsets(state)
        _settings(state)
        state.typed_tools = bool(chain.deferred)
        state.refresh_loaded(state.history)
    return state


def _settings(state: RunState) -> None:
    """The run's model settings: the agent's, the capabilities', then the run's, each a dict or a
    function of the run context (pydantic-ai 2.62's order); merged once here when all are dicts.
    An `override(model_settings=)` replaces the agent's and the capabilities' and wins over the run's."""
    overridden = state.agent._overrides.get()
    if 'model_settings' in overridden:
        layers = [state.run_settings, overridden['model_settings']]
    else:
        layers = [state.agent.model_settings, *state.capabilities.model_settings(), state.run_settings]
    if any(callable(layer) for layer in layers):
        state.settings_layers, state.settings = tuple(layers), None
    else:
        merged = {k: v for layer in layers if layer for k, v in layer.items()}
        state.settings_layers, state.settings = (), merged or None  # type: ignore[assignment]


def _step_toolsets(state: RunState) -> None:
    """The toolsets asked for tools at each step: the agent's, the capabilities' that are not
    function toolsets, then the run's (pydantic-ai's order); and those whose instructions join
    the run's, in the same order with the capabilities' function toolsets among them."""
    chain = state.capabilities
    asked = [*state.own_toolsets, *chain.step_toolsets(), *state.run_toolsets]
    state.toolset = CombinedToolset(asked) if asked else None
    state.instruction_toolsets = [*state.own_toolsets, *chain.instruction_toolsets(), *state.run_toolsets]
    if not (chain.has('prepare_tools') or chain.has('get_wrapper_toolset')):
        state.step_tools = state.step_toolset = None
        return
    # The hooks see every function tool of the step, the wrappers them as prepared (pydantic-ai's
    # order): a toolset of the step's own tools inside both.
    state.step_tools = StepTools()
    prepared = PreparedToolset(state.step_tools, chain.prepare_tools) if chain.has('prepare_tools') else None
    state.step_toolset = chain.wrap_toolset(prepared or state.step_tools)


def _tools_of(agent: Agent[Any, Any], chain: CapabilityChain[Any]) -> dict[str, Any]:
    """The agent's own tools (or the overriding ones) and the capabilities'."""
    own = agent._overrides.get().get('tools', agent._tools)
    return merge_tools(own, chain.toolsets()) if len(chain) else own
