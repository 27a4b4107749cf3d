"""The examples of spec 001 ("Messages and chat history") outside streaming, injection, untrusted
history and processors, with `pydantic_ai` read as `threadline` and a testing model in place of
the named provider."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from threadline import (
    Agent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
    to_json,
    to_jsonable_python,
)
from threadline.models.function import AgentInfo, FunctionModel
from threadline.models.test import TestModel

JOKE = 'Did you hear about the toothpaste scandal? They called it Colgate.'
EXPLAIN = 'This is an excellent joke invented by Samuel Colvin, it needs no explanation.'


def joke_model() -> FunctionModel:
    """Stands in for 'openai:gpt-5.2': a joke first, then the explanation."""

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        answered = sum(isinstance(m, ModelResponse) for m in messages)
        return ModelResponse(parts=[TextPart(JOKE if answered == 0 else EXPLAIN)])

    return FunctionModel(respond, model_name='gpt-5.2')


def test_run_result_messages() -> None:
    agent = Agent(joke_model(), instructions='Be a helpful assistant.')
    result = agent.run_sync('Tell me a joke.')
    assert result.output == JOKE
    request, response = result.all_messages()
    assert isinstance(request, ModelRequest) and isinstance(response, ModelResponse)
    assert request.parts == [UserPromptPart('Tell me a joke.', timestamp=request.parts[0].timestamp)]
    assert request.instructions == 'Be a helpful assistant.'
    assert response.parts == [TextPart(JOKE)] and response.model_name == 'gpt-5.2'
    assert {request.run_id, response.run_id} == {result.run_id}
    assert repr(response.parts[0]) == f'TextPart(content={JOKE!r})'


def test_reusing_messages_in_a_conversation() -> None:
    agent = Agent(joke_model(), instructions='Be a helpful assistant.')
    result1 = agent.run_sync('Tell me a joke.')
    result2 = agent.run_sync('Explain?', message_history=result1.new_messages())
    assert result2.output == EXPLAIN
    contents = [m.parts[0].content for m in result2.all_messages()]
    assert contents == ['Tell me a joke.', JOKE, 'Explain?', EXPLAIN]


def test_conversation_id_is_shared_across_runs() -> None:
    agent = Agent(joke_model())
    result1 = agent.run_sync('Tell me a joke.')
    result2 = agent.run_sync('Explain?', message_history=result1.all_messages())
    assert result1.conversation_id == result2.conversation_id
    assert result1.run_id != result2.run_id


def test_pass_a_pre_minted_run_id() -> None:
    agent = Agent(TestModel())
    result = agent.run_sync('Tell me a joke.', run_id='run-from-api-42')
    assert result.run_id == 'run-from-api-42'


def test_forking_a_conversation() -> None:
    agent = Agent(joke_model())
    result1 = agent.run_sync('Tell me a joke.')
    forked = agent.run_sync('Tell me a different joke.', message_history=result1.all_messages(), conversation_id='new')
    assert forked.conversation_id != result1.conversation_id


def test_serialize_messages_to_json() -> None:
    agent = Agent(joke_model(), instructions='Be a helpful assistant.')
    result1 = agent.run_sync('Tell me a joke.')
    history_step_1 = result1.all_messages()
    as_python_objects = to_jsonable_python(history_step_1)
    same_history_as_step_1 = ModelMessagesTypeAdapter.validate_python(as_python_objects)
    assert same_history_as_step_1 == history_step_1
    result2 = agent.run_sync('Tell me a different joke.', message_history=same_history_as_step_1)
    assert result2.conversation_id == result1.conversation_id

    from_scratch = TypeAdapter(list[ModelMessage])
    assert from_scratch.validate_python(as_python_objects) == history_step_1

    as_json_objects = to_json(history_step_1)
    assert ModelMessagesTypeAdapter.validate_json(as_json_objects) == history_step_1


def test_reusing_messages_with_a_different_model() -> None:
    agent = Agent(joke_model(), instructions='Be a helpful assistant.')
    result1 = agent.run_sync('Tell me a joke.')
    result2 = agent.run_sync(
        'Explain?',
        model=TestModel(custom_output_text=EXPLAIN, model_name='gemini-3-pro-preview'),
        message_history=result1.new_messages(),
    )
    assert result2.output == EXPLAIN
    assert [m.model_name for m in result2.all_messages() if isinstance(m, ModelResponse)] == [
        'gpt-5.2',
        'gemini-3-pro-preview',
    ]


def test_sharing_messages_between_agents() -> None:
    seen: list[Any] = []

    def science(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.append((messages, info.instructions))
        return ModelResponse(parts=[TextPart("Albert Einstein's most famous equation is (E = mc^2).")])

    biography_agent = Agent(
        TestModel(custom_output_text='Albert Einstein was a German-born theoretical physicist.'),
        instructions='Answer biographical questions concisely.',
    )
    science_agent = Agent(FunctionModel(science), instructions='Answer science questions for a general audience.')
    biography_result = biography_agent.run_sync('Who was Albert Einstein?')
    science_result = science_agent.run_sync(
        'What was his most famous equation?', message_history=biography_result.new_messages()
    )
    assert science_result.output == "Albert Einstein's most famous equation is (E = mc^2)."
    sent, instructions = seen[0]
    assert instructions == 'Answer science questions for a general audience.'
    assert [m.parts[0].content for m in sent] == [
        'Who was Albert Einstein?',
        'Albert Einstein was a German-born theoretical physicist.',
        'What was his most famous equation?',
    ]
    assert science_result.all_messages()[0].instructions == 'Answer biographical questions concisely.'
    assert science_result.conversation_id == biography_result.conversation_id
