"""ConversationSearch at the level a user meets it: a model run that calls the tool."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from threadline import Agent, ConversationSearch, ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from threadline.capabilities import KeepLastTurns, ProcessHistory
from threadline.exceptions import UserError
from threadline.messages import ToolReturnPart, UserPromptPart
from threadline.models.function import AgentInfo, FunctionModel
from threadline.storage import AsyncStore, StepPersistence


class Searcher:
    """A model that answers plainly, except for prompts starting with 'search:', where it calls
    the search tool with the JSON arguments after the colon and keeps what the tool returned."""

    def __init__(self) -> None:
        self.results: list[Any] = []
        self.seen: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        import json

        self.seen.append(list(messages))
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        for part in last.parts:
            if isinstance(part, ToolReturnPart):
                self.results.append(part)
                return ModelResponse(parts=[TextPart('found it')])
        prompt = next(p.content for p in last.parts if isinstance(p, UserPromptPart))
        assert isinstance(prompt, str)
        if prompt.startswith('search:'):
            return ModelResponse(parts=[ToolCallPart('search_conversation', json.loads(prompt[7:]), 'call-1')])
        return ModelResponse(parts=[TextPart(f'noted: {prompt}')])


def agent_for(store: AsyncStore[Any], model: Searcher, *extra: Any, **options: Any) -> Agent[None, str]:
    capabilities = [StepPersistence(store, scope='acme'), *extra, ConversationSearch(store, scope='acme', **options)]
    return Agent(FunctionModel(model), capabilities=capabilities)


async def test_the_model_finds_a_turn_compaction_dropped(any_store: AsyncStore[Any]) -> None:
    model = Searcher()
    agent = agent_for(any_store, model, ProcessHistory(KeepLastTurns(1)))
    result = await agent.run('my locker code is zanzibar')
    for prompt in ('what is the weather', 'tell me a joke'):
        result = await agent.run(prompt, message_history=result.all_messages())
    dropped = 'zanzibar' not in ModelMessagesText(model.seen[-1])
    result = await agent.run('search:{"query": "locker code"}', message_history=result.all_messages())
    assert dropped and 'zanzibar' not in ModelMessagesText(model.seen[-2])  # not in what the model saw
    [found] = model.results
    assert found.outcome == 'success'
    assert 'match(es)' in found.content and 'zanzibar' in found.content and '[locker]' in found.content
    assert '· user ·' in found.content and result.output == 'found it'


def ModelMessagesText(messages: list[ModelMessage]) -> str:
    from threadline.storage.index._text import message_text

    return '\n'.join(message_text(m) for m in messages)


async def test_reach_scope_searches_every_conversation_of_the_scope_and_no_other(
    any_store: AsyncStore[Any],
) -> None:
    model = Searcher()
    await agent_for(any_store, model).run('the parcel went to Lisbon')
    other = Agent(FunctionModel(Searcher()), capabilities=[StepPersistence(any_store, scope='globex')])
    await other.run('the parcel went to Lisbon too')
    scoped = agent_for(any_store, model, reach='scope')
    await scoped.run('search:{"query": "lisbon"}')
    await agent_for(any_store, model).run('search:{"query": "lisbon"}')  # a new conversation
    by_scope, by_conversation = (r.content for r in model.results)
    # the prompt and the model's echo of it (and the search prompts themselves), never globex's
    assert by_scope.count('parcel went to [Lisbon]') == 2 and 'too' not in by_scope
    assert 'parcel' not in by_conversation  # a new conversation finds only its own search so far


async def test_filters_roles_runs_and_time(any_store: AsyncStore[Any]) -> None:
    model = Searcher()
    agent = agent_for(any_store, model)
    first = await agent.run('refund please')  # the model answers 'noted: refund please'
    second = await agent.run('another refund', message_history=first.all_messages())
    history = second.all_messages()
    searches = [
        {'query': 'refund', 'roles': ['assistant']},
        {'query': 'refund', 'run_id': first.run_id},
        {'query': 'refund', 'since': (datetime.now(tz=UTC) + timedelta(hours=1)).isoformat()},
    ]
    import json

    for arguments in searches:
        history = (await agent.run('search:' + json.dumps(arguments), message_history=history)).all_messages()
    assistant, run, future = (r.content for r in model.results)
    # (a search's own call is stored before it runs, and its arguments hold the query: found too)
    assert 'noted: another [refund]' in assistant and 'noted: [refund] please' in assistant
    assert '· user ·' not in assistant and '· tool ·' not in assistant
    headers = [line for line in run.splitlines() if line.startswith('[')]
    assert len(headers) == 2 and all(f'run {first.run_id}' in h for h in headers)
    assert future.startswith('No stored message')


async def test_the_answer_is_bounded_and_an_empty_query_is_a_retry(any_store: AsyncStore[Any]) -> None:
    model = Searcher()
    agent = agent_for(any_store, model, max_chars=400, max_hits=10)
    history: list[ModelMessage] = []
    for k in range(8):
        history = (await agent.run(f'invoice number {k} is overdue', message_history=history)).all_messages()
    history = (await agent.run('search:{"query": "invoice"}', message_history=history)).all_messages()
    await agent.run('search:{"query": "  ?! "}', message_history=history)
    bounded, retry = model.results
    assert len(bounded.content) <= 400 and 'more not shown' in bounded.content
    assert retry.outcome == 'retried' and 'no words to search for' in retry.content


async def test_phrases_and_prefixes_through_the_tool(any_store: AsyncStore[Any]) -> None:
    model = Searcher()
    agent = agent_for(any_store, model)
    history = (await agent.run('order forty two was refunded')).all_messages()
    history = (await agent.run('search:{"query": "\\"forty two\\""}', message_history=history)).all_messages()
    history = (await agent.run('search:{"query": "\\"two forty\\""}', message_history=history)).all_messages()
    await agent.run('search:{"query": "refun*"}', message_history=history)
    phrase, reversed_phrase, prefix = (r.content for r in model.results)
    # the prompt (message 0) and the model's echo of it (message 1); later hits are the searches
    # themselves, whose calls and results are stored and indexed like any message
    original = ('message 0 · user', 'message 1 · assistant')
    assert all(m in phrase for m in original) and all(m in prefix for m in original)
    assert not any(m in reversed_phrase for m in original)


def test_scope_must_resolve_and_tool_names_must_not_clash() -> None:
    from threadline.storage import MemoryStore

    store = MemoryStore()
    agent = Agent(FunctionModel(Searcher()), capabilities=[ConversationSearch(store, scope=lambda ctx: '')])
    with pytest.raises(UserError, match='non-empty'):
        agent.run_sync('search:{"query": "x"}')
    clash = Agent(FunctionModel(Searcher()), capabilities=[ConversationSearch(store, scope='s')])

    @clash.tool_plain
    def search_conversation(query: str) -> str:
        return query

    with pytest.raises(UserError, match="'search_conversation' from capability ConversationSearch conflicts"):
        clash.run_sync('hi')


async def test_recall_leaves_out_the_question_itself_system_prompts_and_branch_copies(
    any_store: AsyncStore[Any],
) -> None:
    model = Searcher()
    capabilities = [StepPersistence(any_store, scope='acme'), ConversationSearch(any_store, scope='acme')]
    agent = Agent(FunctionModel(model), capabilities=capabilities, system_prompt='You guard the locker room.')
    first = await agent.run('my locker code is zanzibar')
    cid = first.conversation_id
    assert cid is not None
    # A compaction put a summary first and kept the turn: its messages now live on two branches.
    stored = any_store.sync.load(cid, scope='acme')
    summary = ModelRequest(parts=[UserPromptPart('(summary of earlier turns)')])
    ack = ModelResponse(parts=[TextPart('ok')])
    any_store.sync.replace(cid, [summary, ack, *stored.messages], scope='acme', expected_revision=stored.revision)
    assert len(any_store.sync.branches(cid, scope='acme')) == 2
    await agent.run('search:{"query": "locker"}', message_history=any_store.sync.load(cid, scope='acme').messages)
    [found] = model.results
    assert found.content.startswith('2 match(es)'), found.content  # the first turn's two messages, once each
    assert found.content.count('code is zanzibar') == 2  # the prompt and the answer that echoes it
    assert 'guard' not in found.content and 'search:' not in found.content  # no system prompt, no question
