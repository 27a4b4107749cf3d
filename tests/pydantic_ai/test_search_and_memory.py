"""Threadline's ConversationSearch and Memory on a real pydantic-ai 2.62 Agent: the same tools
(names, schemas, answers) and rules as on Threadline's own Agent, scopes resolved from the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from threadline.pydantic_ai import ConversationSearch, Memory, StepPersistence
from threadline.storage import SQLiteStore


def scripted(*calls: tuple[str, dict[str, Any]]) -> FunctionModel:
    """A model that makes each call in turn, then answers with the last tool result it saw."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        made = sum(isinstance(p, ToolCallPart) for m in messages if isinstance(m, ModelResponse) for p in m.parts)
        if made < len(calls):
            name, args = calls[made]
            return ModelResponse(parts=[ToolCallPart(name, args, f'call-{made}')])
        last = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
        return ModelResponse(parts=[TextPart(str(last[-1].content) if last else 'nothing')])

    return FunctionModel(model)


def tenant(ctx: RunContext[str]) -> str:
    return ctx.deps


async def test_conversation_search_finds_earlier_turns_of_the_run_conversation(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'search.db')
    persistence = StepPersistence(store, scope=tenant)
    first = await Agent(scripted(), deps_type=str, capabilities=[persistence]).run(
        'my locker code is PELICAN', deps='acme'
    )
    search = ConversationSearch(store, scope=tenant)
    agent = Agent(
        scripted(('search_conversation', {'query': 'locker code'})), deps_type=str, capabilities=[persistence, search]
    )
    result = await agent.run('what was my locker code?', deps='acme', message_history=first.all_messages())
    assert 'PELICAN' in result.output
    assert any(
        isinstance(p, ToolReturnPart) and p.tool_name == 'search_conversation'
        for m in result.all_messages()
        for p in m.parts
    )
    # Another tenant's run over the same conversation id finds nothing of acme's.
    other = await Agent(
        scripted(('search_conversation', {'query': 'PELICAN'})), deps_type=str, capabilities=[search]
    ).run('locker?', deps='beta', conversation_id=first.conversation_id)
    assert 'PELICAN' not in other.output


async def test_an_empty_query_is_a_retry_the_model_can_act_on(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'retry.db')
    agent = Agent(
        scripted(('search_conversation', {'query': '  '})),
        deps_type=str,
        capabilities=[ConversationSearch(store, scope=tenant)],
    )
    result = await agent.run('find it', deps='acme')
    retries = [
        p for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart) and p.outcome == 'retried'
    ]
    assert retries and 'no words to search for' in str(retries[0].content)  # pydantic-ai's own retry


async def test_memory_notes_outlive_the_conversation_and_come_back_framed(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'memory.db')
    memory = Memory(store, scope='acme', namespace=tenant)
    writer = Agent(
        scripted(('write_memory', {'section': 'Preferences', 'content': 'Prefers window seats.'})),
        deps_type=str,
        capabilities=[memory],
    )
    await writer.run('remember I like window seats', deps='alice')
    seen: list[list[ModelMessage]] = []

    def reader(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart('noted')])

    await Agent(FunctionModel(reader), deps_type=str, capabilities=[memory]).run('book a flight', deps='alice')
    text = str(seen[0])
    assert '<memory version=' in text and 'Prefers window seats.' in text
    seen.clear()
    await Agent(FunctionModel(reader), deps_type=str, capabilities=[memory]).run('book a flight', deps='bob')
    assert 'window seats' not in str(seen[0])  # another namespace's notes never come back
    notebook = store.sync.read_notebook('alice', scope='acme')
    assert notebook is not None and 'Prefers window seats.' in notebook.content


def test_the_tools_have_threadlines_names_and_schemas(tmp_path: Path) -> None:
    from threadline.memory import Memory as OurMemory

    store = SQLiteStore(tmp_path / 'schemas.db')
    theirs = Memory(store, scope='s', namespace='n').get_toolset()
    ours = OurMemory(store, scope='s', namespace='n').get_toolset()
    assert sorted(theirs.tools) == sorted(ours.tools)
    for name, tool in theirs.tools.items():
        assert tool.tool_def.parameters_json_schema == ours.tools[name].tool_def.parameters_json_schema
        assert tool.tool_def.description == ours.tools[name].tool_def.description
