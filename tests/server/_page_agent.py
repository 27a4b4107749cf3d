"""The agent the page tests serve (`--agent tests.server._page_agent:agent`): a Markdown answer with a
code block, a tool call, a tool that needs an approval, a model that fails, and an answer that tries
to inject markup, each asked for by a word in the prompt."""

from __future__ import annotations

from threadline import (
    Agent,
    DeferredToolRequests,
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.models.function import AgentInfo, FunctionModel

MARKDOWN = "Here is **bold** text and a block:\n\n```python\nprint('hi')\n```\n"
INJECTION = 'Look: <img src=x onerror="window.pwned=1"> <script>window.pwned=2</script> [x](javascript:alert(1)) done'


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    returned = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    if returned:
        return ModelResponse(parts=[TextPart(f'Done: {returned[0].content}')])
    asked = ' '.join(str(p.content) for p in last.parts if isinstance(p, UserPromptPart))
    if 'fail' in asked:
        raise RuntimeError('the model is down')
    if 'code' in asked:
        return ModelResponse(parts=[TextPart(MARKDOWN)])
    if 'inject' in asked:
        return ModelResponse(parts=[TextPart(INJECTION)])
    if 'look up' in asked:
        return ModelResponse(
            parts=[ToolCallPart('lookup_order', {'order_id': '42'}, tool_call_id=f'l-{len(messages)}')]
        )
    if 'refund' in asked:
        return ModelResponse(parts=[ToolCallPart('refund', {'order_id': '42'}, tool_call_id=f'r-{len(messages)}')])
    return ModelResponse(parts=[TextPart('hello')])


agent = Agent(FunctionModel(model), output_type=[str, DeferredToolRequests])


@agent.tool_plain
def lookup_order(order_id: str) -> str:
    return f'order {order_id} ships Monday'


@agent.tool_plain(requires_approval=True)
def refund(order_id: str) -> str:
    return f'order {order_id} refunded'
