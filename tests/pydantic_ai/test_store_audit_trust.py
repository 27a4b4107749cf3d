"""A real pydantic-ai 2.62 Agent uses Threadline's store, audit and trust as they are: its results
are saved, its conversations loaded back for `message_history=` and `usage=`, its histories
audited, signed and verified, and a conversation passes between it and Threadline's own Agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic_ai import Agent as TheirAgent
from pydantic_ai import ModelMessagesTypeAdapter as TheirTA
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import UsageLimits

from tests.storage.conftest import fresh_postgres_url, needs_postgres
from threadline import Agent as OurAgent
from threadline.audit import AuditContext, PromptContract, audit_history
from threadline.exceptions import ConversationNotFound
from threadline.models.function import FunctionModel as OurFunctionModel
from threadline.pydantic_ai import from_pydantic_ai, load_history
from threadline.storage import AsyncStore, FileStore, MemoryStore, PostgresStore, SQLiteStore, SyncStore
from threadline.trust import Keyring, sign_history, verify_history


def a_store(backend: str, tmp_path: Path) -> AsyncStore[SyncStore]:
    if backend == 'memory':
        return MemoryStore()
    if backend == 'sqlite':
        return SQLiteStore(tmp_path / 'pa.db')
    if backend == 'file':
        return FileStore(tmp_path / 'pa-files')
    return PostgresStore(fresh_postgres_url())


BACKENDS = ['memory', 'sqlite', 'file', pytest.param('postgres', marks=needs_postgres)]


def their_agent() -> TheirAgent[None, str]:
    agent = TheirAgent(TestModel(), system_prompt='You answer about the weather.')

    @agent.tool_plain
    def weather(city: str) -> str:
        return f'sunny in {city}'

    return agent


@pytest.mark.parametrize('backend', BACKENDS)
def test_a_pydantic_ai_conversation_is_saved_loaded_and_continued(backend: str, tmp_path: Path) -> None:
    store = a_store(backend, tmp_path)
    agent = their_agent()
    first = agent.run_sync('weather in Paris?')
    revision = store.sync.save(first, scope='tenant-a')
    assert revision >= 1
    history = load_history(store, first.conversation_id, scope='tenant-a')
    assert history.messages == first.all_messages()  # pydantic-ai's own equality
    assert history.usage == first.usage
    second = agent.run_sync('and in Rome?', **history.run_kwargs())
    store.sync.save(second, scope='tenant-a', expected_revision=history.revision)
    stored = store.sync.load(first.conversation_id, scope='tenant-a')
    assert stored.messages == from_pydantic_ai(second.all_messages())
    # The second run started from the stored usage (pydantic-ai adds into it): counted once.
    responses = sum(m.kind == 'response' for m in second.all_messages())
    assert stored.usage.requests == second.usage.requests == responses
    # The stored bytes are the wire JSON pydantic-ai itself writes.
    raw = store.sync.raw_history(first.conversation_id, scope='tenant-a')
    assert json.loads(raw) == json.loads(TheirTA.dump_json(second.all_messages()))
    # Another scope's conversation is not found, for a pydantic-ai user as for anyone.
    with pytest.raises(ConversationNotFound):
        load_history(store, first.conversation_id, scope='tenant-b')


def test_usage_limits_count_the_stored_runs(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'limits.db')
    agent = their_agent()
    first = agent.run_sync('weather in Paris?')
    store.sync.save(first, scope='s')
    history = load_history(store, first.conversation_id, scope='s')
    from pydantic_ai.exceptions import UsageLimitExceeded

    with pytest.raises(UsageLimitExceeded):
        agent.run_sync('again?', usage_limits=UsageLimits(request_limit=2), **history.run_kwargs())


def test_a_streamed_result_is_saved(tmp_path: Path) -> None:
    import asyncio

    store = SQLiteStore(tmp_path / 'stream.db')

    async def go() -> None:
        async with their_agent().run_stream('weather in Oslo?') as result:
            await result.get_output()
        await store.save(result, scope='s')
        stored = await store.load(result.conversation_id, scope='s')
        assert stored.messages == from_pydantic_ai(result.all_messages())

    asyncio.run(go())


def test_a_pydantic_ai_history_is_audited_signed_and_verified_after_a_json_round_trip() -> None:
    result = their_agent().run_sync('weather in Paris?')
    history = result.all_messages()
    key = b'audit-key' * 4
    contract = PromptContract.for_text('You answer about the weather.', name='weather', key=key)
    context = AuditContext(source='client', key=key, prompt_contract=contract)
    report = audit_history(history, context)
    ours = audit_history(from_pydantic_ai(history), context)
    assert report == ours  # the same report as for the same history in Threadline's objects
    assert report.gates[0].passed and report.gates[2].passed  # it loaded, and carries the required prompt
    keys = Keyring.single(b'k' * 32, key_id='k1')
    envelope = sign_history(history, conversation_id='c1', scope='s', keys=keys)
    # A pydantic-ai client holds the history as JSON and sends it back.
    returned = TheirTA.validate_json(TheirTA.dump_json(history))
    assert verify_history(returned, envelope, conversation_id='c1', scope='s', keys=keys).ok
    assert verify_history(from_pydantic_ai(returned), envelope, conversation_id='c1', scope='s', keys=keys).ok
    tampered = TheirTA.validate_json(TheirTA.dump_json(history).replace(b'sunny', b'rainy'))
    assert not verify_history(tampered, envelope, conversation_id='c1', scope='s', keys=keys).ok


def test_a_conversation_passes_between_pydantic_ai_and_threadline_with_the_same_bytes(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'interop.db')

    def answer(messages: list[object], info: AgentInfo) -> object:
        from pydantic_ai.messages import ModelResponse, TextPart

        return ModelResponse(parts=[TextPart(f'answer {len(messages)}')], model_name='fn')

    theirs = TheirAgent(FunctionModel(answer), system_prompt='be brief')
    first = theirs.run_sync('one')
    store.sync.save(first, scope='s')
    cid = first.conversation_id

    def our_answer(messages: list[object], info: object) -> object:
        from threadline.messages import ModelResponse, TextPart

        return ModelResponse(parts=[TextPart(f'answer {len(messages)}')], model_name='fn')

    ours = OurAgent(OurFunctionModel(our_answer), system_prompt='be brief')
    loaded = store.sync.load(cid, scope='s')
    second = ours.run_sync('two', **loaded.run_kwargs())
    store.sync.save(second, scope='s', expected_revision=loaded.revision)
    history = load_history(store, cid, scope='s')
    third = theirs.run_sync('three', **history.run_kwargs())
    store.sync.save(third, scope='s', expected_revision=history.revision)
    raw = store.sync.raw_history(cid, scope='s')
    assert json.loads(raw) == json.loads(TheirTA.dump_json(third.all_messages()))
    users = [p.content for m in third.all_messages() for p in m.parts if p.part_kind == 'user-prompt']
    assert users == ['one', 'two', 'three']


def test_without_threadline_pydantic_ai_imported_the_error_says_to_import_it(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = f"""
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel
from threadline.audit import AuditContext, PromptContract, audit_history
from threadline.exceptions import UserError
from threadline.storage import SQLiteStore
result = Agent(TestModel()).run_sync('hi')
report = audit_history(result.all_messages(), AuditContext(source='client', key=b'k' * 16, prompt_contract=PromptContract.unchecked()))
print(report.verdict)
try:
    SQLiteStore({str(tmp_path / 'x.db')!r}).sync.save(result, scope='s')
except UserError as exc:
    print('refused:', exc)
"""
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
    assert 'refused:' in out and 'import threadline.pydantic_ai' in out
    assert out.splitlines()[0] == 'SERIALIZATION_FAILURE'  # a report, never an exception, from the audit
