"""What the run writes on a response it records: the model that answered, its provider, the cost
at genai-prices' price, the run's ids, and the kind of a typed tool's call."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from threadline.messages import ModelResponse, ToolCallPart
from threadline.models import Model
from threadline.models.budget import price_of

if TYPE_CHECKING:
    from threadline.agent._state import RunState

__all__ = ['stamp_response']


def stamp_response(state: RunState, response: ModelResponse, model: Model) -> None:
    if response.model_name is None:
        response.model_name = model.model_name
    if response.provider_name is None:
        response.provider_name = model.system
    if response.usage.cost is None:
        response.usage.cost = _cost(response, model)
    state.stamp(response)
    if state.typed_tools:
        _type_calls(state, response)


def _type_calls(state: RunState, response: ModelResponse) -> None:
    """Record a call to a typed tool (`load_capability`) with the tool's kind, as the reference
    stores it, so the history names the kind without knowing the agent."""
    for part in response.parts:
        if isinstance(part, ToolCallPart) and part.tool_kind is None:
            tool = state.tools.get(part.tool_name)
            if tool is not None and tool.tool_def.tool_kind is not None:
                part.tool_kind = tool.tool_def.tool_kind


def _cost(response: ModelResponse, model: Model) -> Decimal | None:
    """What the response cost at the answering model's genai-prices price, else None."""

    usage = response.usage
    if not (usage.input_tokens or usage.output_tokens) or response.model_name is None or not model.priced:
        return None
    # The URL identifies the provider best, but only the model that answered has the right one.
    url = model.base_url if response.provider_name == model.system else None
    return price_of(
        (response.model_name, response.provider_name, url),
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
