"""`agent.run(event_stream_handler=...)` inside a DBOS workflow: each response streams inside its
model request step, so the handler sees the events live, and a replayed workflow takes the
response from its checkpoint without asking the model again."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

from dbos import DBOS, SetWorkflowID

from threadline import Agent, ModelMessage, RunContext
from threadline.durable import DBOSDurability
from threadline.messages import (
    AgentStreamEvent,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
)
from threadline.models.function import AgentInfo, DeltaToolCall, FunctionModel

asked: list[int] = []
seen: list[AgentStreamEvent] = []
pieces: list[str] = []  # text as it arrived (a started part grows as its deltas come)


async def streamed(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | dict[int, DeltaToolCall]]:
    asked.append(len(messages))
    if len(messages) == 1:
        yield {0: DeltaToolCall(name='stock', json_args='{"sku": "B-2"}', tool_call_id='call-1')}
        return
    for word in ('B-2 ', 'is ', 'in ', 'stock'):
        yield word


agent = Agent(FunctionModel(stream_function=streamed), capabilities=[DBOSDurability()])


@agent.tool_plain
def stock(sku: str) -> int:
    return 4


async def collect(ctx: RunContext[None], events: AsyncIterable[AgentStreamEvent]) -> None:
    async for event in events:
        seen.append(event)
        if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
            pieces.append(event.part.content)
        if isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            pieces.append(event.delta.content_delta)


@DBOS.workflow(name='stock_turn')
async def stock_turn(prompt: str) -> str:
    result = await agent.run(prompt, run_id=DBOS.workflow_id, event_stream_handler=collect)
    return result.output


async def test_the_handler_sees_the_stream_and_the_steps_are_the_usual_ones(dbos: None) -> None:
    asked.clear(), seen.clear(), pieces.clear()
    with SetWorkflowID('stock-1'):
        assert await (await DBOS.start_workflow_async(stock_turn, 'is B-2 in stock?')).get_result() == 'B-2 is in stock'
    assert pieces == ['B-2 ', 'is ', 'in ', 'stock']  # word by word, as the model streamed it
    assert [type(e) for e in seen if isinstance(e, FunctionToolCallEvent | FunctionToolResultEvent)] == [
        FunctionToolCallEvent,
        FunctionToolResultEvent,
    ]
    names = [s['function_name'] for s in await DBOS.list_workflow_steps_async('stock-1')]
    assert names == [
        'threadline.model_request',
        'threadline.tool_call',
        'threadline.model_request',
    ]
    assert asked == [1, 3]


async def test_a_replay_asks_the_model_nothing_and_streams_no_response(dbos: None) -> None:
    with SetWorkflowID('stock-2'):
        await (await DBOS.start_workflow_async(stock_turn, 'is B-2 in stock?')).get_result()
    asked.clear(), seen.clear(), pieces.clear()
    with SetWorkflowID('stock-2'):
        assert await (await DBOS.start_workflow_async(stock_turn, 'is B-2 in stock?')).get_result() == 'B-2 is in stock'
    assert asked == [] and not [e for e in seen if isinstance(e, PartDeltaEvent)]
