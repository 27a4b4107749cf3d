"""The rest of the run API an application ports: `run_stream_sync`, node predicates, `override`
with tools / instructions / settings / retries, and the `BinaryContent` helpers (checked against
pydantic-ai 2.62 where it answers the same question)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic_ai
import pytest

from threadline import Agent, BinaryContent, BinaryImage, End
from threadline.exceptions import UserError
from threadline.messages import ModelMessagesTypeAdapter, ModelResponse, TextPart, ToolCallPart
from threadline.models.function import AgentInfo, FunctionModel
from threadline.models.test import TestModel
from threadline.storage import SQLiteStore, StepPersistence


async def stream_words(messages: list[Any], info: AgentInfo) -> Any:
    for word in ['Once ', 'upon ', 'a ', 'time']:
        yield word


def test_run_stream_sync_streams_and_stores_from_code_without_a_loop(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'x.db')
    agent = Agent(FunctionModel(stream_function=stream_words), capabilities=[StepPersistence(store, scope='me')])
    with agent.run_stream_sync('tell me') as result:
        deltas = list(result.stream_text(delta=True, debounce_by=None))
    assert deltas == ['Once ', 'upon ', 'a ', 'time']
    assert result.result is not None and result.result.output == 'Once upon a time'
    stored = store.sync.load(result.conversation_id, scope='me')
    assert stored.messages[-1].parts[0].content == 'Once upon a time'
    with agent.run_stream_sync('again', message_history=result.all_messages()) as second:
        assert second.get_output() == 'Once upon a time'
    assert len(second.all_messages()) == 4


async def test_run_stream_sync_refuses_a_running_loop() -> None:
    with (
        pytest.raises(UserError, match='cannot be called from a running event loop'),
        Agent(TestModel()).run_stream_sync('hi'),
    ):
        pass


def test_leaving_the_block_early_records_an_interrupted_response() -> None:
    agent = Agent(FunctionModel(stream_function=stream_words))
    with agent.run_stream_sync('tell me') as result:
        next(iter(result.stream_text(delta=True)))
    assert result.all_messages()[-1].state == 'interrupted'


def test_an_error_in_the_block_interrupts_the_stream_and_is_raised() -> None:
    agent = Agent(FunctionModel(stream_function=stream_words))
    with pytest.raises(KeyError, match='mine'), agent.run_stream_sync('tell me') as result:
        raise KeyError('mine')  # as run_stream does: a failed block keeps what arrived, as interrupted
    assert result.all_messages()[-1].state == 'interrupted'


def test_node_predicates_name_each_node_of_a_run() -> None:
    agent = Agent(TestModel())

    async def kinds() -> list[str]:
        seen = []
        async with agent.iter('hi') as run:
            async for node in run:
                for name in ('user_prompt', 'model_request', 'call_tools', 'end'):
                    if getattr(Agent, f'is_{name}_node')(node):
                        seen.append(name)
        return seen

    import asyncio

    assert asyncio.run(kinds()) == ['user_prompt', 'model_request', 'call_tools', 'end']
    assert Agent.is_end_node(End(None)) and not Agent.is_end_node('x')


def test_override_swaps_tools_instructions_settings_and_retries_inside_the_block_only() -> None:
    seen: list[Any] = []

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.append(([t.name for t in info.function_tools], info.instructions, info.model_settings))
        return ModelResponse(parts=[TextPart('ok')])

    agent = Agent(FunctionModel(model), instructions='Be brief.', model_settings={'temperature': 0.1})

    @agent.tool_plain
    def real() -> str:
        return 'real'

    def fake() -> str:
        return 'fake'

    with agent.override(tools=[fake], instructions='Be thorough.', model_settings={'temperature': 0.9}, retries=3):
        agent.run_sync('hi', instructions='Extra.')
    agent.run_sync('hi')
    assert seen[0] == (['fake'], 'Be thorough.\n\nExtra.', {'temperature': 0.9})
    assert seen[1] == (['real'], 'Be brief.', {'temperature': 0.1})


def test_override_retries_lets_a_tool_retry_more() -> None:
    from threadline.exceptions import ModelRetry

    calls = iter([[ToolCallPart('flaky', {}, f'c{i}')] for i in range(3)])

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=next(calls, None) or [TextPart('done')])

    agent = Agent(FunctionModel(model))
    attempts: list[int] = []

    @agent.tool_plain
    def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise ModelRetry('not yet')
        return 'ok'

    with agent.override(retries=2):
        assert agent.run_sync('go').output == 'done'


def test_binary_content_helpers_agree_with_pydantic_ai(tmp_path: Path) -> None:
    png = tmp_path / 'pixel.png'
    png.write_bytes(b'\x89PNG\r\n\x1a\nfake')
    doc = tmp_path / 'notes.unknownext'
    doc.write_bytes(b'hello')
    for make in (lambda lib: lib.BinaryContent.from_path(png), lambda lib: lib.BinaryContent.from_path(doc)):
        ours, ref = make(__import__('threadline')), make(pydantic_ai)
        assert (type(ours).__name__, ours.media_type, ours.identifier, ours.data) == (
            type(ref).__name__,
            ref.media_type,
            ref.identifier,
            ref.data,
        )
    uri = BinaryContent.from_path(png).data_uri
    image = BinaryContent.from_data_uri(uri)
    assert isinstance(image, BinaryImage) and image.format == 'png' and image.data == png.read_bytes()
    text = BinaryContent.from_data_uri('data:text/plain;base64,aGk=')
    assert type(text) is BinaryContent and text.data == b'hi' and text.is_document
    with pytest.raises(ValueError, match='only base64 data URIs'):
        BinaryContent.from_data_uri('data:text/plain,hi')
    with pytest.raises(ValueError, match='needs an image media type'):
        BinaryImage(data=b'x', media_type='text/plain')
    with pytest.raises(FileNotFoundError, match='no file at'):
        BinaryContent.from_path(tmp_path / 'missing.png')
    wire = ModelMessagesTypeAdapter.dump_json([_request_with(image)])
    assert pydantic_ai.messages.ModelMessagesTypeAdapter.validate_json(wire)[0].parts[0].content[0].data == image.data


def _request_with(content: Any) -> Any:
    from threadline.messages import ModelRequest, UserPromptPart

    return ModelRequest(parts=[UserPromptPart([content])])


def test_per_run_retries_raise_the_agent_limit_for_that_run_only() -> None:
    from threadline.exceptions import ModelRetry, UnexpectedModelBehavior

    def script() -> Any:
        calls = iter([[ToolCallPart('flaky', {}, f'c{i}')] for i in range(3)])
        return lambda messages, info: ModelResponse(parts=next(calls, None) or [TextPart('done')])

    attempts: list[int] = []

    def flaky() -> str:
        attempts.append(1)
        if len(attempts) % 3:
            raise ModelRetry('not yet')
        return 'ok'

    agent = Agent(FunctionModel(script()), tools=[flaky])
    assert agent.run_sync('go', retries=2).output == 'done'
    attempts.clear()
    with pytest.raises(UnexpectedModelBehavior, match='exceeded max retries count of 1'):
        Agent(FunctionModel(script()), tools=[flaky]).run_sync('go')
