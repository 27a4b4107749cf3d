"""Code written against the documented pydantic-ai API runs after the import swap, and behaves as
the reference does (checked against pydantic-ai 2.62 where it can answer the same question)."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from typing import Any

import pydantic_ai
import pydantic_core
import pytest
from pydantic_ai import Agent as ReferenceAgent
from pydantic_ai import ModelMessagesTypeAdapter as ReferenceTA
from pydantic_ai import ModelRetry as ReferenceRetry
from pydantic_ai import RunContext as ReferenceContext
from pydantic_ai import usage as reference_usage

import threadline
from threadline import Agent, ModelMessagesTypeAdapter, ModelRetry, RunContext
from threadline.messages import ModelResponse, TextPart
from threadline.messages import ToolCallPart as ToolCallPartRef
from threadline.models.function import AgentInfo, FunctionModel
from threadline.models.test import TestModel


def test_pydantic_core_serializes_a_history_as_the_reference_does() -> None:
    history = Agent(TestModel()).run_sync('Tell me a joke.').all_messages()
    as_python = pydantic_core.to_jsonable_python(history)
    assert as_python == json.loads(ModelMessagesTypeAdapter.dump_json(history))
    reference = ReferenceTA.validate_python(as_python)
    assert pydantic_core.to_jsonable_python(reference) == json.loads(ReferenceTA.dump_json(reference))
    assert ModelMessagesTypeAdapter.validate_json(pydantic_core.to_json(history)) == history
    assert pydantic_core.to_jsonable_python({'history': history[:1]})['history'] == as_python[:1]


@pytest.mark.parametrize('name', ['RetryPromptPart', 'ThinkingPart', 'CachePoint', 'TextContent'])
def test_top_level_names_of_the_reference_exist(name: str) -> None:
    assert hasattr(pydantic_ai, name) and hasattr(threadline, name)


def test_the_usage_module() -> None:
    from threadline.usage import RequestUsage, RunUsage, UsageLimits

    for name in ('RequestUsage', 'RunUsage', 'UsageLimits'):
        assert hasattr(reference_usage, name)
    assert RunUsage().has_values() is False and RequestUsage(input_tokens=1).has_values()
    assert UsageLimits(request_limit=3).request_limit == 3


@pytest.mark.parametrize('details', [{'reasoning_tokens': 0}, {'reasoning_tokens': 2}, {}])
def test_has_values_matches_the_reference(details: dict[str, int]) -> None:
    ours = threadline.RunUsage(details=dict(details)).has_values()
    assert ours == reference_usage.RunUsage(details=dict(details)).has_values()


def test_asdict_of_a_part_carries_its_kind_and_replace_still_works() -> None:
    part = TextPart('hello')
    assert dataclasses.asdict(part)['part_kind'] == 'text'
    assert dataclasses.asdict(part) == {
        k: v for k, v in dataclasses.asdict(pydantic_ai.TextPart('hello')).items() if k in dataclasses.asdict(part)
    }
    assert dataclasses.replace(part, content='bye') == TextPart('bye')


def reply(messages: list[Any], info: AgentInfo, suffix: str = '') -> ModelResponse:
    return ModelResponse(parts=[TextPart('ok' + suffix)])


class Callable_:
    def __call__(self, messages: list[Any], info: AgentInfo) -> ModelResponse:
        return reply(messages, info, '!')


@pytest.mark.parametrize('function', [functools.partial(reply, suffix='?'), Callable_()])
def test_function_model_takes_callable_objects_and_partials(function: Any) -> None:
    assert Agent(FunctionModel(function)).run_sync('hi').output in ('ok?', 'ok!')


@pytest.mark.parametrize(
    'usage', [{'request_tokens': None}, {'details': None}, {'response_tokens': None, 'request_tokens': 3}]
)
def test_older_usage_with_nulls_loads_as_in_the_reference(usage: dict[str, Any]) -> None:
    raw = json.dumps([{'kind': 'response', 'parts': [{'part_kind': 'text', 'content': 'x'}], 'usage': usage}])
    reference = ReferenceTA.validate_json(raw)
    ours = ModelMessagesTypeAdapter.validate_json(raw)
    assert ours[0].usage.input_tokens == reference[0].usage.input_tokens
    assert ours[0].usage.output_tokens == reference[0].usage.output_tokens


async def test_run_stream_events_is_also_an_async_context_manager() -> None:
    from threadline.messages import AgentRunResultEvent

    agent = Agent(TestModel())
    async with agent.run_stream_events('hi') as events:
        kinds = [type(event).__name__ async for event in events]
    assert kinds[-1] == AgentRunResultEvent.__name__
    iterated = [event async for event in agent.run_stream_events('hi')]
    assert type(iterated[-1]).__name__ == kinds[-1]
    async with agent.run_stream_events('hi') as events:
        await events.__anext__()  # leave early: the run is closed, nothing hangs


async def test_driving_a_run_past_its_end_is_an_error_not_a_hang() -> None:
    from threadline import End, UserError

    agent = Agent(TestModel())
    async with agent.iter('hi') as run:
        node = run.next_node
        for _ in range(50):
            if isinstance(node, End):
                break
            node = await run.next(node)
        assert isinstance(node, End) and run.result is not None
        with pytest.raises(UserError, match=r'threadline\.End'):
            await run.next(node)  # what a loop testing pydantic_graph.End would do next


def _calls_four_times(messages: list[Any], module: Any) -> Any:
    calls = sum(1 for m in messages for p in m.parts if getattr(p, 'part_kind', '') == 'tool-call')
    if calls < 4:
        return module.ModelResponse(parts=[module.ToolCallPart('flaky', {'n': calls}, f'c{calls}')])
    return module.ModelResponse(parts=[module.TextPart('done')])


def ours_retry_counts() -> list[int]:
    from threadline import messages

    seen: list[int] = []
    agent = Agent(FunctionModel(lambda m, info: _calls_four_times(m, messages)), retries=3)

    @agent.tool
    def flaky(ctx: RunContext[None], n: int) -> str:
        seen.append(ctx.retry)
        if len(seen) in (1, 3):
            raise ModelRetry('again')
        return 'ok'

    agent.run_sync('go')
    return seen


def reference_retry_counts() -> list[int]:
    from pydantic_ai import messages
    from pydantic_ai.models.function import FunctionModel as ReferenceFunctionModel

    seen: list[int] = []
    agent = ReferenceAgent(ReferenceFunctionModel(lambda m, info: _calls_four_times(m, messages)), retries=3)

    @agent.tool
    def flaky(ctx: ReferenceContext[None], n: int) -> str:
        seen.append(ctx.retry)
        if len(seen) in (1, 3):
            raise ReferenceRetry('again')
        return 'ok'

    agent.run_sync('go')
    return seen


def test_a_tool_retry_counter_resets_after_a_success_as_in_the_reference() -> None:
    assert ours_retry_counts() == reference_retry_counts()


def _test_model_output(agent_cls: Any, model: Any, value: Any) -> Any:
    agent = agent_cls(model)

    @agent.tool_plain
    def lookup() -> object:
        return value

    return json.loads(agent.run_sync('go').output)


@pytest.mark.parametrize('kind', ['pydantic model', 'bytes', 'binary content', 'mapping'])
def test_tool_return_values_reach_the_model_as_in_the_reference(kind: str) -> None:
    from pydantic import BaseModel
    from pydantic_ai import BinaryContent as ReferenceBinary
    from pydantic_ai.models.test import TestModel as ReferenceTestModel

    from threadline.messages import BinaryContent

    class Refund(BaseModel):
        order: int = 42
        approved: bool = True

    values = {
        'pydantic model': (Refund(), Refund()),
        'bytes': ('🐈 Hello'.encode(), '🐈 Hello'.encode()),
        'binary content': (
            BinaryContent(b'\x89PNG', media_type='image/png'),
            ReferenceBinary(b'\x89PNG', media_type='image/png'),
        ),
        'mapping': ({'x': [1, 'y']}, {'x': [1, 'y']}),
    }
    ours_value, their_value = values[kind]
    ours = _test_model_output(Agent, TestModel(call_tools=['lookup']), ours_value)
    theirs = _test_model_output(ReferenceAgent, ReferenceTestModel(call_tools=['lookup']), their_value)
    assert ours == theirs


def test_a_tool_can_ask_for_approval_or_defer_itself_at_run_time(tmp_path: Any) -> None:
    from threadline import DeferredToolRequests, DeferredToolResults
    from threadline.exceptions import ApprovalRequired, CallDeferred
    from threadline.storage import SQLiteStore, StepPersistence

    store = SQLiteStore(tmp_path / 'd.db')
    agent = Agent(
        TestModel(call_tools=['refund', 'ship']),
        output_type=[str, DeferredToolRequests],
        capabilities=[StepPersistence(store, scope='s')],
    )
    done: list[str] = []

    @agent.tool
    def refund(ctx: RunContext[None], amount: int) -> str:
        if not ctx.tool_call_approved:
            raise ApprovalRequired({'reason': 'over the limit'})
        done.append('refund')
        return 'refunded'

    @agent.tool_plain
    def ship(order: int) -> str:
        raise CallDeferred

    first = agent.run_sync('refund and ship')
    assert isinstance(first.output, DeferredToolRequests) and done == []
    [approval] = first.output.approvals
    [external] = first.output.calls
    results = DeferredToolResults(approvals={approval.tool_call_id: True}, calls={external.tool_call_id: 'shipped'})
    second = agent.run_sync(message_history=first.all_messages(), deferred_tool_results=results)
    assert isinstance(second.output, str) and done == ['refund']  # approved, then run once


def test_override_swaps_model_and_deps_for_a_test() -> None:
    from threadline.models.function import FunctionModel

    agent = Agent(FunctionModel(lambda m, info: ModelResponse(parts=[TextPart('real model')])), deps_type=int)

    @agent.system_prompt
    def prompt(ctx: RunContext[int]) -> str:
        return f'deps={ctx.deps}'

    with agent.override(model=TestModel(custom_output_text='test model'), deps=7):
        result = agent.run_sync('hi', deps=1)
        assert result.output == 'test model'
        assert 'deps=7' in json.dumps(pydantic_core.to_jsonable_python(result.all_messages()))
    assert agent.run_sync('hi', deps=1).output == 'real model'


def test_capture_run_messages_keeps_the_messages_of_a_failed_run() -> None:
    from threadline import UnexpectedModelBehavior, capture_run_messages

    agent = Agent(FunctionModel(lambda m, info: ModelResponse(parts=[ToolCallPartRef('missing', {}, 'c1')])), retries=1)
    with capture_run_messages() as messages, pytest.raises(UnexpectedModelBehavior):
        agent.run_sync('hi')
    assert messages and messages[0].parts[0].part_kind == 'user-prompt'
    assert any(isinstance(m, ModelResponse) for m in messages)


def dynamic_prompts(agent_cls: Any, model: Any) -> list[str]:
    count = {'n': 0}
    agent = agent_cls(model)

    @agent.system_prompt(dynamic=True)
    def today() -> str:
        count['n'] += 1
        return f'version {count["n"]}'

    first = agent.run_sync('a')
    second = agent.run_sync('b', message_history=first.all_messages())
    return [p.content for m in second.all_messages() for p in m.parts if p.part_kind == 'system-prompt']


def test_dynamic_system_prompts_are_rendered_again_on_each_run_as_in_the_reference() -> None:
    from pydantic_ai.models.test import TestModel as ReferenceTestModel

    assert dynamic_prompts(Agent, TestModel()) == dynamic_prompts(ReferenceAgent, ReferenceTestModel()) == ['version 2']


def test_run_sync_leaves_the_thread_an_event_loop_as_the_reference_does() -> None:
    import asyncio
    import threading
    import warnings

    from pydantic_ai.models.test import TestModel as ReferenceTestModel

    def has_loop_after(agent: Any) -> bool:
        outcome: list[bool] = []

        def body() -> None:
            agent.run_sync('hi')
            with warnings.catch_warnings():
                warnings.simplefilter('ignore', DeprecationWarning)
                try:
                    outcome.append(not asyncio.get_event_loop().is_closed())
                except RuntimeError:
                    outcome.append(False)

        thread = threading.Thread(target=body)  # a fresh thread: nothing else set a loop there
        thread.start()
        thread.join()
        return outcome == [True]

    assert has_loop_after(Agent(TestModel())) == has_loop_after(ReferenceAgent(ReferenceTestModel())) is True


def test_a_capability_is_generic_in_its_deps() -> None:
    from dataclasses import dataclass

    from threadline.capabilities import AbstractCapability

    @dataclass
    class Deps:
        tenant: str

    seen: list[str] = []

    class Tenancy(AbstractCapability[Deps]):
        async def before_run(self, ctx: RunContext[Deps]) -> None:
            seen.append(ctx.deps.tenant)

    Agent(TestModel(), deps_type=Deps, capabilities=[Tenancy()]).run_sync('hi', deps=Deps('acme'))
    assert seen == ['acme']


def test_an_enqueued_request_is_stamped_like_the_reference_stamps_it() -> None:
    from threadline import ModelRequest, UserPromptPart

    agent = Agent(TestModel(call_tools=['inject']))

    @agent.tool
    def inject(ctx: RunContext[None]) -> str:
        ctx.enqueue(ModelRequest(parts=[UserPromptPart('injected')]))
        return 'ok'

    messages = agent.run_sync('go').all_messages()
    [request] = [
        m
        for m in messages
        if isinstance(m, ModelRequest) and m.parts[0].part_kind == 'user-prompt' and m.parts[0].content == 'injected'
    ]
    assert request.timestamp is not None and request.run_id and request.conversation_id


@pytest.mark.parametrize(
    'url',
    [
        'data:image/png;base64,iVBORw==',
        'data:application/pdf;base64,JVBERi0=',
        'data:audio/mpeg;base64,AA==',
        'data:,hi',
    ],
)
def test_a_data_url_gives_its_media_type_as_in_the_reference(url: str) -> None:
    from threadline.messages import DocumentUrl

    assert DocumentUrl(url).media_type == pydantic_ai.DocumentUrl(url).media_type


def test_a_run_context_and_a_run_result_can_be_built_by_hand_for_a_test() -> None:
    from threadline.agent import AgentRunResult
    from threadline.usage import RunUsage

    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    assert ctx.prompt is None and ctx.messages == [] and ctx.retry == 0
    assert ctx.run_id and ctx.conversation_id  # deliberate: fresh ids where the reference leaves None
    result = AgentRunResult('done')
    assert result.output == 'done' and result.all_messages() == [] and result.new_messages() == []


def _stored_model(result_type: Any) -> Any:
    from pydantic import BaseModel

    class Stored(BaseModel):
        label: str
        result: result_type

    return Stored


def test_a_stored_run_result_crosses_between_the_libraries_both_ways() -> None:
    """Seed 003: put an AgentRunResult on your own pydantic model and serialize it."""
    from pydantic_ai.agent import AgentRunResult as ReferenceResult
    from pydantic_ai.models.test import TestModel as ReferenceTestModel

    from threadline.agent import AgentRunResult

    theirs = ReferenceAgent(ReferenceTestModel()).run_sync('hello')
    ours = Agent(TestModel()).run_sync('hello')
    TheirStored, OurStored = _stored_model(ReferenceResult[str]), _stored_model(AgentRunResult[str])
    their_json = TheirStored(label='x', result=theirs).model_dump_json()
    our_json = OurStored(label='x', result=ours).model_dump_json()
    assert json.loads(our_json)['result'].keys() == json.loads(their_json)['result'].keys()

    loaded = OurStored.model_validate_json(their_json).result
    assert isinstance(loaded, AgentRunResult) and loaded.output == theirs.output
    assert (loaded.run_id, loaded.conversation_id) == (theirs.run_id, theirs.conversation_id)
    assert ModelMessagesTypeAdapter.dump_python(loaded.all_messages(), mode='json') == json.loads(
        ReferenceTA.dump_json(theirs.all_messages())
    )
    assert loaded.usage.input_tokens == theirs.usage.input_tokens and loaded.usage.requests == theirs.usage.requests

    back = TheirStored.model_validate_json(our_json).result
    assert back.output == ours.output and back.conversation_id == ours.conversation_id
    assert len(back.all_messages()) == len(ours.all_messages()) and back.usage.requests == ours.usage.requests
    assert OurStored.model_validate_json(our_json).result.new_messages() == ours.new_messages()


def test_saving_a_hand_built_result_without_ids_says_what_is_missing() -> None:
    from threadline.agent import AgentRunResult
    from threadline.exceptions import UserError
    from threadline.storage import MemoryStore

    with pytest.raises(UserError, match='no run_id'):
        MemoryStore().sync.save(AgentRunResult('x'), scope='s', conversation_id='c')


def _prompt_seen_on_resume(agent_class: Any, model: Any, request: Any, prompt_part: Any, context: Any) -> list[Any]:
    seen: list[Any] = []
    agent = agent_class(model)

    def probe(ctx: Any) -> str:
        seen.append(ctx.prompt)
        return 'ok'

    probe.__annotations__['ctx'] = context[None]  # each library wants its own RunContext here
    agent.tool(probe)

    agent.run_sync(message_history=[request(parts=[prompt_part('resume me')])])
    return seen


def test_ctx_prompt_when_resuming_from_a_request_matches_the_reference() -> None:
    from pydantic_ai.messages import ModelRequest as RefRequest
    from pydantic_ai.messages import UserPromptPart as RefPrompt
    from pydantic_ai.models.test import TestModel as RefTestModel

    from threadline.messages import ModelRequest, UserPromptPart

    theirs = _prompt_seen_on_resume(ReferenceAgent, RefTestModel(), RefRequest, RefPrompt, ReferenceContext)
    ours = _prompt_seen_on_resume(Agent, TestModel(), ModelRequest, UserPromptPart, RunContext)
    assert ours == theirs == ['resume me']


def test_agent_run_ctx_state_holds_the_history_ids_step_and_usage() -> None:
    import asyncio

    agent = Agent(TestModel())

    @agent.tool_plain
    def lookup() -> str:
        return 'found'

    async def main() -> None:
        async with agent.iter('hello') as run:
            async for _ in run:
                pass
            state = run.ctx.state
            assert state.message_history == run.all_messages() and len(state.message_history) == 4
            assert (state.run_id, state.conversation_id) == (run.run_id, run.conversation_id)
            assert state.run_step == 2 and state.usage.requests == 2 and state.usage.tool_calls == 1
            assert run.ctx.messages is state.message_history  # RunContext attributes still read through

    asyncio.run(main())


def _stream_probe(agent_class: Any, model: Any, limits: Any) -> tuple[Any, ...]:
    import asyncio

    agent = agent_class(model)

    async def read_then_get() -> tuple[Any, Any]:
        async with agent.run_stream('hi') as result:
            streamed = [o async for o in result.stream_output()]
            return streamed[-1], await result.get_output()

    async def limited() -> str:
        try:
            async with agent.run_stream('hi', usage_limits=limits) as result:
                [t async for t in result.stream_text(delta=True)]
        except Exception as exc:  # noqa: BLE001 - the exception is what is compared
            found = re.search(r'output_tokens=\d+', str(exc))
            return f'{type(exc).__name__}: {found.group() if found else exc}'
        return 'not stopped'

    return asyncio.run(read_then_get()), asyncio.run(limited())


def test_stream_output_then_get_output_and_a_mid_stream_limit_match_the_reference() -> None:
    from pydantic_ai import UsageLimits as RefLimits
    from pydantic_ai.models.test import TestModel as RefTestModel

    from threadline import UsageLimits

    text = 'one two three four five six seven'
    theirs = _stream_probe(ReferenceAgent, RefTestModel(custom_output_text=text), RefLimits(output_tokens_limit=2))
    ours = _stream_probe(Agent, TestModel(custom_output_text=text), UsageLimits(output_tokens_limit=2))
    assert ours == theirs
    assert ours[1].startswith('UsageLimitExceeded') and 'output_tokens=3' in ours[1]  # stopped mid-stream


def _handled_events(agent_class: Any, model: Any, tool_options: dict[str, Any]) -> tuple[Any, ...]:
    calls: list[tuple[int, list[str]]] = []

    async def handler(ctx: Any, events: Any) -> None:
        calls.append((ctx.run_step, [type(e).__name__ async for e in events]))

    agent = agent_class(model, **tool_options)

    def lookup(n: int) -> str:
        return f'found {n}'

    agent.tool_plain(lookup)
    result = agent.run_sync('find it', event_stream_handler=handler)
    return result.output, len(result.all_messages()), calls


def test_event_stream_handler_gets_each_step_s_events_as_in_the_reference() -> None:
    from pydantic_ai.models.test import TestModel as RefTestModel

    theirs = _handled_events(ReferenceAgent, RefTestModel(), {})
    ours = _handled_events(Agent, TestModel(), {})
    assert ours == theirs
    assert [kinds for _, kinds in ours[2]][1] == ['FunctionToolCallEvent', 'FunctionToolResultEvent']


def test_a_handler_that_reads_nothing_leaves_the_run_unchanged() -> None:
    async def ignore(ctx: Any, events: Any) -> None:
        return None

    agent = Agent(TestModel(custom_output_text='same answer'))
    plain = agent.run_sync('q')
    handled = agent.run_sync('q', event_stream_handler=ignore)
    assert handled.output == plain.output and len(handled.all_messages()) == len(plain.all_messages())


def _processed(lib: Any) -> list[Any]:
    """Runs whose history processor rebuilds the last request: what is stamped, what is new."""
    m = lib.messages

    def rebuild_last(messages: list[Any]) -> list[Any]:
        last = messages[-1]
        if isinstance(last, m.ModelRequest):
            return [*messages[:-1], m.ModelRequest(parts=[m.UserPromptPart(f'rewritten: {last.parts[-1].content}')])]
        return messages

    agent = lib.Agent(lib.TestModel(), capabilities=[lib.ProcessHistory(rebuild_last)])
    old = lib.Agent(lib.TestModel()).run_sync('first').all_messages()
    out = []
    for prompt, history in (('second', old), (None, [*old, m.ModelRequest(parts=[m.UserPromptPart('pending')])])):
        result = agent.run_sync(prompt, message_history=history)
        built = result.all_messages()[2]
        out.append(
            (
                built.parts[0].content,
                built.timestamp is not None,
                built.run_id == result.run_id,
                built.conversation_id == result.conversation_id,
                len(result.new_messages()),
            )
        )
    return out


def test_a_request_a_processor_builds_is_stamped_and_counted_as_in_the_reference() -> None:
    from types import SimpleNamespace

    import pydantic_ai.capabilities
    import pydantic_ai.messages
    import pydantic_ai.models.test

    import threadline.capabilities
    import threadline.messages

    reference = SimpleNamespace(
        Agent=ReferenceAgent,
        TestModel=pydantic_ai.models.test.TestModel,
        ProcessHistory=pydantic_ai.capabilities.ProcessHistory,
        messages=pydantic_ai.messages,
    )
    ours = SimpleNamespace(
        Agent=Agent,
        TestModel=TestModel,
        ProcessHistory=threadline.capabilities.ProcessHistory,
        messages=threadline.messages,
    )
    assert _processed(ours) == _processed(reference)
    assert _processed(ours)[1] == ('rewritten: pending', True, True, True, 1)


def test_the_import_paths_applications_use() -> None:
    """Names pydantic-ai applications import from these paths resolve in Threadline at the same ones."""
    import pydantic_ai
    import pydantic_ai.models.openai as their_openai

    import threadline
    import threadline.models.openai as our_openai

    for name in ('FilePart', 'UploadedFile', 'ModelHTTPError', 'ModelRateLimitError', 'ModelServerError'):
        assert name in pydantic_ai.__all__ and name in threadline.__all__, name
        assert getattr(threadline, name).__name__ == getattr(pydantic_ai, name).__name__
    for name in ('OpenAIChatModel', 'OpenAIResponsesModel'):
        assert getattr(our_openai, name).__name__ == getattr(their_openai, name).__name__
