"""Injecting messages mid-run: delivery points, coalescing, priorities, events, errors."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from threadline import (
    Agent,
    End,
    ModelRequest,
    ModelResponse,
    RunContext,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UsageLimitExceeded,
    UsageLimits,
    UserError,
    UserPromptPart,
)
from threadline.capabilities import Hooks
from threadline.exceptions import UndrainedPendingMessagesError
from threadline.messages._events import EnqueuedMessagesEvent
from threadline.models.function import AgentInfo, FunctionModel
from threadline.models.test import TestModel


def recorder() -> tuple[FunctionModel, list[list[Any]]]:
    seen: list[list[Any]] = []

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        if len(seen) == 1 and info.function_tools:
            return ModelResponse(parts=[ToolCallPart(t.name, {}, f'c-{t.name}') for t in info.function_tools])
        return ModelResponse(parts=[TextPart(f'answer {len(seen)}')])

    return FunctionModel(respond), seen


async def test_spec_enqueue_from_a_tool_lands_after_its_result() -> None:
    model, seen = recorder()
    agent = Agent(model)

    @agent.tool
    def trigger_alert(ctx: RunContext[None]) -> str:
        ctx.enqueue('Alert: production is degraded, prioritize triage.')
        return 'alert raised'

    @agent.tool
    def enter_incident_mode(ctx: RunContext[None]) -> str:
        ctx.enqueue(SystemPromptPart(content='You are now in incident mode: be terse and action-oriented.'))
        return 'incident mode enabled'

    result = await agent.run('status?')
    stored = result.all_messages()[2]
    kinds = [(p.part_kind, getattr(p, 'tool_call_id', None)) for p in stored.parts]
    assert kinds == [
        ('tool-return', 'c-trigger_alert'),
        ('user-prompt', None),
        ('tool-return', 'c-enter_incident_mode'),
        ('system-prompt', None),
    ]
    sent = seen[1][-1].parts  # on the wire repair gathers the results first; the system prompt is wrapped
    assert [p.part_kind for p in sent] == ['tool-return', 'tool-return', 'user-prompt', 'user-prompt']
    assert sent[3].content == '<system>You are now in incident mode: be terse and action-oriented.</system>'


async def test_spec_enqueue_from_external_code_driving_iter_redirects_a_run_that_would_end() -> None:
    model, seen = recorder()
    agent = Agent(model)
    async with agent.iter('Summarize the latest deploy report') as agent_run:
        enqueue_id = agent_run.enqueue(
            'A new error was just reported — include it in the summary.', priority='when_idle'
        )
        node = agent_run.next_node
        while not isinstance(node, End):
            node = await agent_run.next(node)
    assert enqueue_id is not None and len(seen) == 2  # one more model request
    redirect = agent_run.all_messages()[2]
    assert redirect.parts[0].content.startswith('A new error') and redirect.run_id == agent_run.run_id
    assert agent_run.result is not None and agent_run.result.output == 'answer 2'
    with pytest.raises(UserError, match='agent run has ended'):
        agent_run.enqueue('too late')


async def test_every_way_of_driving_delivers() -> None:
    for mode in ('run', 'async_for'):
        model, seen = recorder()
        agent = Agent(
            model, capabilities=[Hooks(before_run=lambda ctx: ctx.enqueue('queued at start', priority='when_idle'))]
        )
        if mode == 'run':
            await agent.run('hi')
        else:
            async with agent.iter('hi') as agent_run:
                async for _ in agent_run:
                    pass
        assert len(seen) == 2, mode


async def test_asap_joins_the_next_request_and_coalesces() -> None:
    model, seen = recorder()
    agent = Agent(model)

    @agent.tool
    def look(ctx: RunContext[None]) -> str:
        return 'seen'

    async with agent.iter('go') as agent_run:
        node = agent_run.next_node
        node = await agent_run.next(node)  # the first model request goes out
        assert agent_run.enqueue('caption', 'more text') is not None  # adjacent content: one user part
        assert agent_run.enqueue() is None
        while not isinstance(node, End):
            node = await agent_run.next(node)
    delivered = [
        m
        for m in agent_run.all_messages()
        if isinstance(m, ModelRequest)
        and any(isinstance(p, UserPromptPart) and p.content == ['caption', 'more text'] for p in m.parts)
    ]
    assert len(delivered) == 1 and delivered[0].instructions is None  # delivered as its own request, no instructions
    assert len(seen) == 2


async def test_complete_messages_and_bad_content() -> None:
    model, _ = recorder()
    agent = Agent(model)
    async with agent.iter('hi') as agent_run:
        with pytest.raises(UserError, match='must end with a `ModelRequest`'):
            agent_run.enqueue(ModelResponse(parts=[TextPart('synthetic')]))
        with pytest.raises(UserError, match="'asap' or 'when_idle'"):
            agent_run.enqueue('x', priority='now')
        with pytest.raises(UserError, match='enqueue item 0 is a int'):
            agent_run.enqueue(3)
        agent_run.enqueue(
            ModelResponse(parts=[ToolCallPart('lookup', {}, 'syn-1')]),
            ModelRequest(parts=[ToolReturnPart('lookup', 'synthetic result', 'syn-1')]),
        )
        async for _ in agent_run:
            pass
    kinds = [type(m).__name__ for m in agent_run.all_messages()]
    assert kinds[:4] == ['ModelRequest', 'ModelResponse', 'ModelRequest', 'ModelResponse']


async def test_events_carry_the_id_and_the_delivered_messages() -> None:
    model, _ = recorder()
    agent = Agent(model)

    @agent.tool
    def tell(ctx: RunContext[None]) -> str:
        ctx.enqueue('from the tool')
        return 'told'

    events = [e async for e in agent.run_stream_events('go')]
    [event] = [e for e in events if isinstance(e, EnqueuedMessagesEvent)]
    assert event.parts and event.parts[0].content == 'from the tool' and event.messages[0].parts == list(event.parts)


async def test_a_tool_that_always_enqueues_is_stopped_by_usage_limits() -> None:
    agent = Agent(
        TestModel(),
        capabilities=[
            Hooks(after_node_run=lambda ctx, **kw: (ctx.enqueue('again', priority='when_idle'), kw['result'])[1])
        ],
    )
    with pytest.raises(UsageLimitExceeded):
        await agent.run('loop', usage_limits=UsageLimits(request_limit=5))


async def test_enqueue_from_another_thread_through_the_loop() -> None:
    model, seen = recorder()
    agent = Agent(model)
    async with agent.iter('hi') as agent_run:
        loop = asyncio.get_running_loop()
        done = threading.Event()

        def webhook() -> None:
            loop.call_soon_threadsafe(agent_run.enqueue, 'from a webhook thread')
            done.set()

        threading.Thread(target=webhook).start()
        await asyncio.to_thread(done.wait)
        await asyncio.sleep(0)
        async for _ in agent_run:
            pass
    assert any(
        isinstance(p, UserPromptPart) and p.content == 'from a webhook thread' for m in seen[-1] for p in m.parts
    )


def test_undrained_error_exists_for_except_clauses() -> None:
    assert issubclass(UndrainedPendingMessagesError, Exception)
