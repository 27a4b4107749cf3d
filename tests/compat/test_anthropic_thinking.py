"""The unified `thinking` setting and Anthropic's own (`anthropic_thinking`, `anthropic_effort`)
are sent to Claude models as pydantic-ai 2.62 sends them: the `thinking` object (adaptive, a
budget, disabled, between tools), `output_config.effort`, sampling settings dropped with a
warning on the models that refuse them, no forced tool call while a request thinks, and the
same refusals before sending.

Each case makes one request through the official SDK to a local server on both sides (the
reference streams a request with a large `max_tokens`) and compares the whole body, folded as
`test_request_bodies` folds it, and the sampling warnings. `max_tokens` differs by design (see
`test_request_bodies`); what both must hold, a budget leaving room for the answer, is checked.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from tests.compat.test_request_bodies import FOLD
from tests.compat.test_thinking_setting import _settings
from tests.models.providers.server import ProviderServer, fixture
from threadline.exceptions import UserError
from threadline.messages import ModelRequest, UserPromptPart
from threadline.models import ModelRequestParameters, ToolDefinition

pytest.importorskip('pydantic_ai')

VALUES: list[object] = [None, True, False, 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']
MODELS = [
    'claude-3-5-haiku-latest',
    'claude-sonnet-4-5',
    'claude-haiku-4-5',
    'claude-opus-4-5',
    'claude-sonnet-4-6',
    'claude-opus-4-7',
    'claude-opus-4-8',
    'claude-opus-5',
    'claude-opus-5-5',
    'claude-sonnet-5',
    'claude-sonnet-5-5',
    'claude-haiku-5-5',
    'claude-fable-5',
    'claude-fable-5-1',
]
_MODELS: dict[tuple[str, str, str], Any] = {}
"""Each side's model of a name, made once (an SDK client costs more to make than a request)."""
_SCHEMA = {'type': 'object', 'properties': {'answer': {'type': 'string'}}, 'required': ['answer']}


@pytest.fixture(scope='module')
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


async def _ours(server: ProviderServer, name: str, settings: dict[str, Any], output_tool: bool) -> Any:
    from threadline.models.anthropic import AnthropicModel, AnthropicProvider

    key = ('ours', server.url, name)
    if key not in _MODELS:
        _MODELS[key] = AnthropicModel(name, provider=AnthropicProvider(base_url=server.url, api_key='k', max_retries=0))
    model = _MODELS[key]
    params = ModelRequestParameters()
    if output_tool:
        tool = ToolDefinition('final_result', _SCHEMA, 'The answer.', kind='output')
        params = ModelRequestParameters(output_tools=[tool], allow_text_output=False, output_mode='tool')
    server.replies.clear()  # a request the other side refused before sending left its answer queued
    server.queue(fixture('anthropic_text.json'))
    await model.request([ModelRequest(parts=[UserPromptPart('hi')])], settings, params)  # type: ignore[arg-type]
    return server.bodies()[-1]


async def _reference(server: ProviderServer, name: str, settings: dict[str, Any], output_tool: bool) -> Any:
    from pydantic_ai.messages import ModelRequest as RefRequest
    from pydantic_ai.messages import UserPromptPart as RefUser
    from pydantic_ai.models import ModelRequestParameters as RefParameters
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider
    from pydantic_ai.tools import ToolDefinition as RefTool

    key = ('reference', server.url, name)
    if key not in _MODELS:
        _MODELS[key] = AnthropicModel(name, provider=AnthropicProvider(api_key='k', base_url=server.url))
    model = _MODELS[key]
    params = RefParameters()
    if output_tool:
        tool = RefTool(name='final_result', parameters_json_schema=_SCHEMA, description='The answer.', kind='output')
        params = RefParameters(output_tools=[tool], allow_text_output=False, output_mode='tool')
    from pydantic_ai.exceptions import ModelAPIError

    # It streams a request whose `max_tokens` is large (most of them): answered as a stream, or
    # else, when it wanted JSON, once more as JSON.
    for answer in ('anthropic_stream.json', 'anthropic_text.json'):
        server.replies.clear()
        server.queue(fixture(answer))
        try:
            await model.request([RefRequest(parts=[RefUser('hi')])], dict(settings), params)  # type: ignore[arg-type]
        except ModelAPIError as error:
            if 'Expected a JSON response' not in str(error):
                raise
            continue
        break
    return server.bodies()[-1]


async def _outcome(make: Any, server: ProviderServer, name: str, settings: dict[str, Any], output_tool: bool) -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        try:
            raw = await make(server, name, settings, output_tool)
        except Exception as error:  # each side's own UserError: refused before sending, by both
            if type(error).__name__ != 'UserError':
                raise
            return 'refused'
    budget = (raw.get('thinking') or {}).get('budget_tokens')
    if 'max_tokens' not in settings:
        assert budget is None or raw['max_tokens'] >= budget + 4096, (name, settings, raw['max_tokens'])
    said = sorted(str(w.message) for w in caught if 'Sampling parameters' in str(w.message))
    return FOLD['anthropic'](raw), said


async def _compare(server: ProviderServer, cases: list[tuple[str, dict[str, Any], bool]]) -> None:
    differing = []
    for name, settings, output_tool in cases:
        ours = await _outcome(_ours, server, name, settings, output_tool)
        reference = await _outcome(_reference, server, name, settings, output_tool)
        if ours != reference:
            differing.append((name, settings, output_tool, ours, reference))
    assert not differing, differing[:3]


async def test_thinking_is_sent_to_claude_as_the_reference_sends_it(server: ProviderServer) -> None:
    cases = [(n, _settings(t, False), False) for n in MODELS for t in VALUES]
    cases += [(n, _settings(t, True), False) for n in MODELS for t in (None, False, 'high')]
    await _compare(server, cases)


async def test_a_request_that_thinks_does_not_force_the_output_tool(server: ProviderServer) -> None:
    cases = [(n, _settings(t, False), True) for n in MODELS for t in (None, True, False, 'high')]
    await _compare(server, cases)


@pytest.mark.parametrize(
    'given',
    [
        {'anthropic_thinking': {'type': 'adaptive'}},
        {'anthropic_thinking': {'type': 'enabled', 'budget_tokens': 2048}},
        {'anthropic_thinking': {'type': 'enabled', 'budget_tokens': 40_000}},
        {'anthropic_thinking': {'type': 'disabled'}},
        {'anthropic_effort': 'max'},
        {'anthropic_effort': 'xhigh', 'anthropic_thinking': {'type': 'disabled'}},
        {'anthropic_effort': 'low', 'max_tokens': 1000},
    ],
)
async def test_anthropic_settings_win_over_thinking(server: ProviderServer, given: dict[str, Any]) -> None:
    names = ['claude-sonnet-4-5', 'claude-opus-4-5', 'claude-sonnet-4-6', 'claude-opus-4-7', 'claude-opus-5']
    cases = [(n, {**_settings(t, False), **given}, False) for n in names for t in (None, 'high', False)]
    await _compare(server, [*cases, *((n, {**given, 'thinking': 'high'}, True) for n in names)])


async def test_a_budget_on_a_model_that_refuses_budgets_is_a_clear_error(server: ProviderServer) -> None:
    with pytest.raises(UserError, match=r"'claude-opus-4-7' does not support .*'type': 'enabled'.*adaptive"):
        await _ours(
            server, 'claude-opus-4-7', {'anthropic_thinking': {'type': 'enabled', 'budget_tokens': 2048}}, False
        )
    with pytest.raises(UserError, match=r"'claude-opus-5' does not support `anthropic_effort='max'` while thinking"):
        await _ours(server, 'claude-opus-5', {'anthropic_effort': 'max', 'thinking': False}, False)
