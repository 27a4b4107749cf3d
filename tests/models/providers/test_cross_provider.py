"""One conversation carried from OpenAI to Anthropic and back, checking every request body.

The conversation has a standing system prompt, a tool, a mid-conversation system prompt, and a run
that crashed after the model asked for two tools: one call complete (interrupted: no result), one
whose arguments were cut off mid-stream. The history is repaired, continued on Anthropic (which
thinks, with a signature, and calls a tool), then continued on OpenAI again.
"""

from __future__ import annotations

from typing import Any

from tests.models.providers.conftest import anthropic_model, assert_valid_anthropic, assert_valid_openai, openai_model
from tests.models.providers.server import ProviderServer, fixture
from threadline import Agent
from threadline.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    ToolCallPart,
    UserPromptPart,
    repair_messages,
)

INTERRUPTED = 'The tool call was interrupted before a result was produced.'


def _crashed_turn() -> list[Any]:
    return [
        ModelRequest(parts=[SystemPromptPart('MID: answer formally.'), UserPromptPart('And Rome and Oslo?')]),
        ModelResponse(
            parts=[
                ToolCallPart('get_weather', {'city': 'Rome'}, 'call_rome'),
                ToolCallPart('get_weather', '{"city": "Os', 'call_oslo'),
            ],
            provider_name='openai',
            model_name='gpt-5.2',
        ),
    ]


async def test_openai_to_anthropic_and_back(server: ProviderServer) -> None:
    agent = Agent(openai_model(server), system_prompt='You are a weather bot.')

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return f'sunny in {city}'

    server.queue(fixture('openai_tool_call.json'), fixture('openai_text.json'))
    first = await agent.run('Weather in Paris?')

    # The stored history survives a JSON round trip before the next provider sees it.
    stored = ModelMessagesTypeAdapter.validate_json(
        ModelMessagesTypeAdapter.dump_json(first.all_messages() + _crashed_turn())
    )
    server.queue(fixture('anthropic_tool_use.json'), fixture('anthropic_text.json'))
    second = await agent.run('Are you there?', message_history=repair_messages(stored), model=anthropic_model(server))

    server.queue(fixture('openai_text.json'))
    third = await agent.run('Thanks', message_history=second.all_messages())
    assert third.output == 'It is sunny in Paris.'

    bodies = server.bodies()
    assert [b['model'] for b in bodies] == ['gpt-5.2', 'gpt-5.2', 'claude-sonnet-4-6', 'claude-sonnet-4-6', 'gpt-5.2']
    for body in bodies[:2] + bodies[4:]:
        assert_valid_openai(body)
    for body in bodies[2:4]:
        assert_valid_anthropic(body)

    anthropic = bodies[2]
    assert anthropic['system'] == [{'type': 'text', 'text': 'You are a weather bot.'}]
    assert [m['role'] for m in anthropic['messages']] == [
        'user',
        'assistant',
        'user',
        'assistant',
        'user',
        'assistant',
        'user',
    ]
    assert anthropic['messages'][1]['content'] == [
        {'type': 'tool_use', 'id': 'call_abc123', 'name': 'get_weather', 'input': {'city': 'Paris'}}
    ]
    assert anthropic['messages'][4]['content'] == [
        {'type': 'text', 'text': '<system>MID: answer formally.</system>'},
        {'type': 'text', 'text': 'And Rome and Oslo?'},
    ]
    assert anthropic['messages'][5]['content'] == [
        {'type': 'tool_use', 'id': 'call_rome', 'name': 'get_weather', 'input': {'city': 'Rome'}},
        {'type': 'tool_use', 'id': 'call_oslo', 'name': 'get_weather', 'input': {'INVALID_JSON': '{"city": "Os'}},
    ]
    assert anthropic['messages'][6]['content'] == [
        {'type': 'tool_result', 'tool_use_id': 'call_rome', 'content': INTERRUPTED},
        {'type': 'tool_result', 'tool_use_id': 'call_oslo', 'content': INTERRUPTED},
        {'type': 'text', 'text': 'Are you there?'},
    ]
    # Anthropic's thinking goes back to Anthropic with its signature.
    assert bodies[3]['messages'][7]['content'][0]['type'] == 'thinking'
    assert bodies[3]['messages'][7]['content'][0]['signature']

    back = bodies[4]['messages']
    assert back[0] == {'role': 'system', 'content': 'You are a weather bot.'}
    assert {
        'role': 'system',
        'content': 'MID: answer formally.',
    } in back  # in place: OpenAI takes system messages anywhere
    assert back[back.index({'role': 'system', 'content': 'MID: answer formally.'}) + 1] == {
        'role': 'user',
        'content': 'And Rome and Oslo?',
    }
    calls = [m for m in back if m.get('tool_calls')]
    assert calls[1]['tool_calls'][1]['function']['arguments'] == '{"INVALID_JSON":"{\\"city\\": \\"Os"}'
    # Anthropic's turn comes back as text plus a tool call; its thinking, which Chat Completions has
    # no block for, comes back as tagged text (as pydantic-ai sends it).
    assert calls[2] == {
        'role': 'assistant',
        'content': '<think>\nThe user wants the weather; I should call the tool.\n</think>\n\nLet me check.',
        'tool_calls': [
            {
                'id': 'toolu_01A09q90qw90lq917835lq9',
                'type': 'function',
                'function': {'name': 'get_weather', 'arguments': '{"city":"Paris"}'},
            }
        ],
    }
    assert {'role': 'tool', 'tool_call_id': 'call_oslo', 'content': INTERRUPTED} in back
    assert back[-1] == {'role': 'user', 'content': 'Thanks'}
