"""A pydantic-ai application module, as a user would write one, for `threadline serve --agent`."""

from __future__ import annotations

from collections.abc import AsyncIterator

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

REFUNDED: list[int] = []


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
        return ModelResponse(parts=[TextPart('Refunded.')])
    text = ' '.join(str(getattr(p, 'content', '')) for m in messages for p in m.parts)
    if 'refund' in text:
        return ModelResponse(parts=[ToolCallPart('refund', {'order': 7}, 'call-refund')])
    return ModelResponse(parts=[TextPart('Hello from pydantic-ai.')])


async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    """The same answers, streamed (the server streams every turn)."""
    response = model(messages, info)
    for part in response.parts:
        if isinstance(part, TextPart):
            for word in part.content.split(' '):
                yield word if word == part.content.split(' ')[0] else ' ' + word
        elif isinstance(part, ToolCallPart):
            yield {0: DeltaToolCall(part.tool_name, part.args_as_json_str(), tool_call_id=part.tool_call_id)}


support = Agent(
    FunctionModel(model, stream_function=stream),
    output_type=[str, DeferredToolRequests],
    system_prompt='You are support.',
)


@support.tool_plain(requires_approval=True)
def refund(order: int) -> str:
    REFUNDED.append(order)
    return f'refunded {order}'
