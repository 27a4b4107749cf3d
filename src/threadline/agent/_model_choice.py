"""Which model serves a run, when capabilities choose (`get_model`) or resolve names
(`resolve_model_id`), as pydantic-ai 2.62 decides.

Rules:
- the run's `model=` wins; then the last capability whose `get_model()` is not None; then the
  agent's `model=`; with none of them the run is a `UserError`;
- a model name (`'provider:name'`) goes to each capability's `resolve_model_id` in the chain's
  order and the first model returned serves; with none, `infer_model` makes it;
- a static choice (a model or a name) is made once, when the run starts; a selector (a function
  of a `ModelSelectionContext`, sync or async) is asked before each model request, with the
  model of the previous request (the lower-precedence one on the first), and may return a model,
  a name, or None to keep that model;
- several selectors are all asked, in the chain's order; the last answer that is not None wins.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeAlias

from typing_extensions import TypeVar

from threadline.exceptions import UserError
from threadline.messages import ModelMessage, ModelRequest, ModelRequestPart, SystemPromptPart, UserContent
from threadline.models import Model, infer_model

if TYPE_CHECKING:
    from threadline.agent._agent import Agent
    from threadline.agent._chain import CapabilityChain
    from threadline.agent._state import RunState

__all__ = [
    'ModelResolutionContext',
    'ModelSelectionContext',
    'ModelSelector',
    'UnchosenModel',
    'choose_for_request',
    'choose_static',
    'resolve',
    'selectors',
]

D = TypeVar('D', default=Any)


@dataclass(frozen=True, kw_only=True)
class ModelResolutionContext(Generic[D]):
    """What `resolve_model_id` knows: the run has no context yet, as its model is not known."""

    agent: Agent[D, Any]
    deps: D


@dataclass(frozen=True, kw_only=True)
class ModelSelectionContext(ModelResolutionContext[D]):
    """What a model selector knows before a model request."""

    model: Model | None
    """The model of the previous request; on the first, the one that would serve without a selector."""
    run_step: int
    """The request being chosen for, from 1."""
    prompt: str | Sequence[UserContent] | None = None
    messages: list[ModelMessage]
    """The history the request will send, ending with it (its instructions and system prompt
    parts are added once the model is chosen)."""


ModelSelector: TypeAlias = Callable[[ModelSelectionContext[D]], 'Model | str | Awaitable[Model | str | None] | None']
"""A function choosing the model for each request (see the module rules)."""


def choose_static(chain: CapabilityChain[Any], chosen: Model | str | None) -> Model | str | None:
    """The run's model before selectors: `chosen` (the run's), else the last capability's static
    `get_model()`, else None (the agent's then serves)."""
    if chosen is not None:
        return chosen
    for capability in reversed(chain.hooked('get_model')):
        given: Model | str | ModelSelector[Any] | None = capability.get_model()
        if isinstance(given, (Model, str)):
            return given
    return None


def selectors(chain: CapabilityChain[Any]) -> list[ModelSelector[Any]]:
    """The capabilities' model selectors, in the chain's order."""
    found = (c.get_model() for c in chain.hooked('get_model'))
    return [given for given in found if callable(given) and not isinstance(given, Model)]


async def resolve(chain: CapabilityChain[Any], agent: Agent[Any, Any], deps: object, model: Model | str) -> Model:
    """`model` as a `Model`: a name through the capabilities' `resolve_model_id`, else `infer_model`."""
    if isinstance(model, str) and chain.has('resolve_model_id'):
        ctx = ModelResolutionContext(agent=agent, deps=deps)
        for capability in chain.hooked('resolve_model_id'):
            found = await capability.resolve_model_id(ctx, model_id=model)
            if found is not None:
                return found
    return infer_model(model)


class UnchosenModel(Model):
    """Stands for the run's model until it is known: a name capabilities resolve when the run
    starts, or none until a selector chooses one for the first request."""

    def __init__(self, name: str | None) -> None:
        self.name = name

    @property
    def model_name(self) -> str:
        return self.name or 'unchosen'

    async def request(self, *args: object, **kwargs: object) -> Any:
        raise UserError('`model` must either be set on the agent or included when calling it.')


async def choose_for_request(state: RunState) -> None:
    """Before a model request: the model the capabilities' selectors choose for it, if they do
    (a run given `model=` is not asked about)."""
    if not state.selects_model:
        return
    ctx = state.ctx
    current = None if isinstance(state.model, UnchosenModel) else state.model
    assert ctx.agent is not None  # a run's context always names its agent
    choice = ModelSelectionContext(
        agent=ctx.agent,
        deps=ctx.deps,
        model=current,
        run_step=ctx.run_step + 1,
        prompt=ctx.prompt,
        messages=_before_choice(state.history),
    )
    picked = await _select(state.capabilities, choice)
    if picked is not None:
        state.model = ctx.model = picked
    elif current is None:
        raise UserError('`model` must either be set on the agent or included when calling it.')


async def _select(chain: CapabilityChain[Any], ctx: ModelSelectionContext) -> Model | None:
    """The model the selectors choose for `ctx` (None: no selector chose)."""
    picked: Model | str | None = None
    for selector in selectors(chain):
        answer = selector(ctx)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer is not None and not isinstance(answer, (Model, str)):
            raise UserError(f'a model selector returned {type(answer).__name__}: return a Model, a model name or None')
        picked = answer if answer is not None else picked
    return None if picked is None else await resolve(chain, ctx.agent, ctx.deps, picked)


def _before_choice(messages: list[ModelMessage]) -> list[ModelMessage]:
    """`messages` as they are before the model is chosen: the last request without its system
    prompt parts (they are added for the chosen model)."""
    last = messages[-1] if messages else None
    if isinstance(last, ModelRequest) and any(isinstance(p, SystemPromptPart) for p in last.parts):
        kept: list[ModelRequestPart] = [p for p in last.parts if not isinstance(p, SystemPromptPart)]
        return [*messages[:-1], replace(last, parts=kept)]
    return list(messages)
