"""run_id and conversation_id exactly as the spec's "Correlating runs" section says."""

from __future__ import annotations

import re

import pytest

from threadline import Agent, ModelRequest, ModelResponse, TextPart, UserError, UserPromptPart
from threadline._uuid import uuid7
from threadline.models.test import TestModel

UUID7 = re.compile(r'^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$')


def test_uuid7_shape_and_order() -> None:
    ids = [uuid7() for _ in range(2000)]
    assert all(UUID7.match(i) for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


def test_fresh_run_id_per_run_and_conversation_inherited() -> None:
    agent = Agent(TestModel())
    r1 = agent.run_sync('Tell me a joke.')
    r2 = agent.run_sync('Explain?', message_history=r1.all_messages())
    assert r1.conversation_id == r2.conversation_id
    assert r1.run_id != r2.run_id
    assert UUID7.match(r1.run_id) and UUID7.match(r1.conversation_id) and r1.run_id != r1.conversation_id
    assert all(m.run_id == r2.run_id and m.conversation_id == r2.conversation_id for m in r2.new_messages())
    assert all(m.run_id == r1.run_id for m in r2.all_messages()[:2])  # history is not back-filled


def test_pre_minted_run_id_and_literal_new() -> None:
    agent = Agent(TestModel())
    assert agent.run_sync('Tell me a joke.', run_id='run-from-api-42').run_id == 'run-from-api-42'
    assert agent.run_sync('x', run_id='new').run_id == 'new'  # 'new' is only a conversation_id sentinel


def test_bad_run_ids() -> None:
    agent = Agent(TestModel())
    with pytest.raises(UserError, match='non-empty'):
        agent.run_sync('x', run_id='')
    r1 = agent.run_sync('x')
    with pytest.raises(UserError, match='already appears in message_history'):
        agent.run_sync('y', message_history=r1.all_messages(), run_id=r1.run_id)


def test_conversation_id_rules() -> None:
    agent = Agent(TestModel())
    r1 = agent.run_sync('Tell me a joke.')
    forked = agent.run_sync('Tell me a different joke.', message_history=r1.all_messages(), conversation_id='new')
    assert forked.conversation_id != r1.conversation_id and UUID7.match(forked.conversation_id)
    explicit = agent.run_sync('x', message_history=r1.all_messages(), conversation_id='thread-9')
    assert explicit.conversation_id == 'thread-9'
    history = [
        ModelRequest(parts=[UserPromptPart('a')], conversation_id='c-old'),
        ModelResponse(parts=[TextPart('b')], conversation_id='c-last'),
        ModelRequest(parts=[UserPromptPart('c')]),
        ModelResponse(parts=[TextPart('d')]),
    ]
    assert agent.run_sync('next', message_history=history).conversation_id == 'c-last'


def test_ids_a_model_set_are_kept() -> None:
    from threadline.models.function import FunctionModel

    model = FunctionModel(
        lambda m, i: ModelResponse(parts=[TextPart('x')], run_id='model-run', conversation_id='model-conv')
    )
    result = Agent(model).run_sync('hi')
    assert (result.response.run_id, result.response.conversation_id) == ('model-run', 'model-conv')
    assert result.all_messages()[0].run_id == result.run_id
