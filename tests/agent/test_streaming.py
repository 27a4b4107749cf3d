"""Streaming runs: when the final response joins the history, deltas, cancellation, events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from threadline import Agent, ModelRequest, ModelResponse, TextPart
from threadline.messages import ToolCallPart, ToolReturnPart
from threadline.messages._events import (
    AgentRunResultEvent,
    FinalResultEvent,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
)
from threadline.models.function import AgentInfo, DeltaToolCall, FunctionModel
from threadline.models.test import TestModel
from threadline.storage import MemoryStore, StepPersistence

JOKE = 'Did you hear about the toothpaste scandal? They called it Colgate.'


def joke_agent(**kwargs: Any) -> Agent[Any, str]:
    return Agent(TestModel(custom_output_text=JOKE), instructions='Be a helpful assistant.', **kwargs)


async def test_spec_streamed_run_result_messages() -> None:
    agent = joke_agent()
    async with agent.run_stream('Tell me a joke.') as result:
        before = result.all_messages()
        assert [type(m) for m in before] == [ModelRequest] and not result.is_complete
        texts = [text async for text in result.stream_text(debounce_by=None)]
        assert texts[0] == 'Did ' and texts[-1] == JOKE and len(texts) == len(JOKE.split())
        after = result.all_messages()
        assert [type(m) for m in after] == [ModelRequest, ModelResponse] and after[1].parts == [TextPart(JOKE)]
        assert result.is_complete and result.new_messages() == after
        assert result.usage.requests == 1 and result.run_id == after[1].run_id


async def test_delta_text_still_records_the_assembled_response() -> None:
    async with joke_agent().run_stream('Tell me a joke.') as result:
        deltas = [d async for d in result.stream_text(delta=True, debounce_by=None)]
        assert ''.join(deltas) == JOKE and deltas[1] == 'you '
        assert result.all_messages()[-1].parts == [TextPart(JOKE)]


async def test_output_response_and_get_output() -> None:
    async with joke_agent().run_stream('x') as result:
        outputs = [o async for o in result.stream_output()]
        assert outputs[-1] == JOKE and outputs[-2] == JOKE
    async with joke_agent().run_stream('x') as result:
        snapshots = [r async for r in result.stream_response()]
        assert snapshots[0].state == 'incomplete' and snapshots[-1].state == 'complete'
        assert snapshots[-1].parts == [TextPart(JOKE)]
    async with joke_agent().run_stream('x') as result:
        assert await result.get_output() == JOKE
        assert await result.get_output() == JOKE  # read to its end: the result stays available
    async with joke_agent().run_stream('x') as result:
        assert [o async for o in result.stream_output()][-1] == await result.get_output() == JOKE


async def test_unread_stream_is_left_out_and_cancel_is_interrupted() -> None:
    async with joke_agent().run_stream('x') as result:
        pass
    assert len(result.all_messages()) == 1
    agent = joke_agent()
    async with agent.run_stream('x') as result:
        async for _ in result.stream_text(debounce_by=None):
            await result.cancel()
            break
    last = result.all_messages()[-1]
    assert isinstance(last, ModelResponse) and last.state == 'interrupted' and last.parts == [TextPart('Did ')]
    nxt = await agent.run('next', message_history=result.all_messages())
    assert nxt.all_messages()[1].state == 'interrupted' and nxt.output == JOKE
    async with agent.run_stream('x') as broken:
        async for _ in broken.stream_text():
            break  # leaving mid-read records what arrived, interrupted
    assert broken.all_messages()[-1].state == 'interrupted'


async def test_tool_steps_run_before_the_stream_is_handed_over() -> None:
    agent = Agent(TestModel())

    @agent.tool_plain
    def ping() -> str:
        return 'pong'

    async with agent.run_stream('use tool') as result:
        assert [m.parts[0].part_kind for m in result.all_messages()] == ['user-prompt', 'tool-call', 'tool-return']
        assert await result.get_output() == '{"ping":"pong"}'
        assert len(result.all_messages()) == 4


async def test_stream_function_tool_args_are_concatenated_text() -> None:
    async def stream_fn(messages: list[Any], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {0: DeltaToolCall(name='tool_one', tool_call_id='s1')}
            yield {0: DeltaToolCall(json_args='{"q": ')}
            yield {0: DeltaToolCall(json_args='"abc"}')}
        else:
            for word in ('streamed ', 'answer'):
                yield word

    agent = Agent(FunctionModel(stream_function=stream_fn))

    @agent.tool_plain
    def tool_one(q: str) -> str:
        return q.upper()

    async with agent.run_stream('go') as result:
        assert await result.get_output() == 'streamed answer'
    call = result.all_messages()[1].parts[0]
    assert call.args == '{"q": "abc"}' and result.all_messages()[2].parts[0].content == 'ABC'
    assert (await agent.run('go')).output == 'streamed answer'  # a stream function serves plain runs too


async def test_run_stream_events_yields_typed_events_in_order() -> None:
    agent = Agent(TestModel())

    @agent.tool_plain
    def ping() -> str:
        return 'pong'

    events = [e async for e in agent.run_stream_events('use tool')]
    kinds = [type(e) for e in events]
    assert kinds[:4] == [PartStartEvent, PartEndEvent, FunctionToolCallEvent, FunctionToolResultEvent]
    assert FinalResultEvent in kinds and PartDeltaEvent in kinds
    assert isinstance(events[-1], AgentRunResultEvent) and events[-1].result.output == '{"ping":"pong"}'


async def test_streamed_runs_persist_like_plain_runs_and_cancel_leaves_store_consistent() -> None:
    store = MemoryStore()
    agent = Agent(TestModel(custom_output_text=JOKE), capabilities=[StepPersistence(store, scope='s')])
    async with agent.run_stream('x') as result:
        await result.get_output()
    stored = await store.load(result.conversation_id, scope='s')
    assert stored.messages == result.all_messages()
    kinds = [e.kind for e in await store.list_events(result.run_id, scope='s')]
    assert kinds[0] == 'run_started' and kinds[-1] == 'run_completed'
    async with agent.run_stream('again', **stored.run_kwargs()) as second:
        async for _ in second.stream_text():
            await second.cancel()
            break
    after = await store.load(result.conversation_id, scope='s')
    assert after.messages[-1].state == 'interrupted' and after.messages == second.all_messages()
    snapshots = await store.list_snapshots(second.run_id, scope='s')
    assert snapshots[-1].state == 'interrupted'
    third = await agent.run('and now?', **after.run_kwargs())  # the next run carries on from it
    assert third.output == JOKE


@pytest.mark.parametrize('stop_after', [0, 1, 3, 7, 100])
async def test_cancelling_at_any_point_leaves_a_loadable_repairable_history(stop_after: int) -> None:
    from threadline import ModelMessagesTypeAdapter
    from threadline.messages import pairing_report, repair_messages

    agent = Agent(TestModel(custom_output_text=JOKE))

    @agent.tool_plain
    def ping() -> str:
        return 'pong'

    async with agent.run_stream('x') as result:
        seen = 0
        async for _ in result.stream_text(delta=True):
            seen += 1
            if seen > stop_after:
                await result.cancel()
                break
    history = result.all_messages()
    assert ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(history)) == history
    assert not pairing_report(repair_messages(history)).open_calls
    assert (await agent.run('again', message_history=history)).output == JOKE


async def test_a_call_cut_off_by_a_cancelled_stream_is_never_executed_on_the_next_run() -> None:
    """Document 001: a final response marked interrupted has calls that will never be executed;
    resuming closes them as interrupted (the reference 2.62 executes them)."""
    import asyncio

    charged: list[int] = []

    async def stream(messages: list[Any], info: Any) -> Any:
        yield 'Let me charge that. '
        yield {0: DeltaToolCall(name='charge', json_args='{"amount": 100}', tool_call_id='call-1')}
        await asyncio.sleep(0.05)
        yield 'done'

    def charge(amount: int) -> str:
        charged.append(amount)
        return 'charged'

    agent = Agent(FunctionModel(stream_function=stream), tools=[charge])
    async with agent.run_stream('pay') as result:
        async for response in result.stream_response():
            if any(isinstance(p, ToolCallPart) for p in response.parts):
                await result.cancel()
                break
    history = result.all_messages()
    assert history[-1].state == 'interrupted' and isinstance(history[-1].parts[-1], ToolCallPart)
    for prompt in (None, 'go on'):
        resumed = await Agent(TestModel(call_tools=[]), tools=[charge]).run(prompt, message_history=history)
        returns = [p for m in resumed.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
        assert charged == [] and [r.outcome for r in returns] == ['interrupted']
