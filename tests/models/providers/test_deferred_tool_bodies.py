"""A history holding a tool reveal reaches each provider valid: the delta is bookkeeping (never
sent), and the revealed tool is offered among the request's tools."""

from __future__ import annotations

from typing import Any

import pytest

from tests.models.providers.conftest import anthropic_model, assert_valid_anthropic, assert_valid_openai, openai_model
from tests.models.providers.server import ProviderServer, fixture
from threadline import Agent
from threadline.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolAvailabilityDeltaPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

HISTORY = [
    ModelRequest(parts=[UserPromptPart('find the refund tool')]),
    ModelResponse(parts=[ToolCallPart('search_tools', {'query': 'refund'}, 'c1')]),
    ModelRequest(
        parts=[
            ToolReturnPart('search_tools', 'found refund', 'c1'),
            ToolAvailabilityDeltaPart(tools_added=['refund'], tool_call_id='c1'),
        ]
    ),
    ModelResponse(parts=[TextPart('I can refund now.')]),
    ModelRequest(parts=[UserPromptPart('refund order 7')]),
]


@pytest.mark.parametrize(
    ('build', 'validate', 'reply', 'names'),
    [
        (openai_model, assert_valid_openai, 'openai_text.json', lambda b: [t['function']['name'] for t in b['tools']]),
        (anthropic_model, assert_valid_anthropic, 'anthropic_text.json', lambda b: [t['name'] for t in b['tools']]),
    ],
)
async def test_a_revealed_tool_is_offered_and_the_delta_is_not_sent(
    server: ProviderServer, build: Any, validate: Any, reply: str, names: Any
) -> None:
    server.queue(fixture(reply))
    agent = Agent(build(server))
    agent.tool_plain(lambda query: 'found', name='search_tools')
    agent.tool_plain(lambda order: 'done', name='refund', defer_loading=True)
    agent.tool_plain(lambda: 'x', name='never_revealed', defer_loading=True)
    await agent.run(message_history=HISTORY)
    body = server.bodies()[0]
    validate(body)
    assert sorted(names(body)) == ['refund', 'search_tools']
    assert 'tool-availability-delta' not in str(body) and 'tools_added' not in str(body)
