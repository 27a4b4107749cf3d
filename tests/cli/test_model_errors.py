"""A failed model request in one line: the provider's own message from its error body, whatever shape
the provider gives it, and the hint that fits the status."""

from __future__ import annotations

import pytest

from threadline.cli._errors import model_error_line
from threadline.exceptions import ModelHTTPError
from threadline.models.anthropic import AnthropicModel
from threadline.models.google import GoogleModel
from threadline.models.openai import OpenAIChatModel


@pytest.mark.parametrize(
    ('model', 'error', 'line'),
    [
        (
            AnthropicModel('claude-sonnet-4-6'),
            ModelHTTPError(429, 'claude', {'type': 'error', 'error': {'type': 'rate_limit', 'message': 'Slow\n down'}}),
            'anthropic answered HTTP 429: Slow down (try again shortly)',
        ),
        (
            GoogleModel('gemini-2.5-flash'),
            ModelHTTPError(403, 'gemini', {'error': {'code': 403, 'message': 'API key not valid', 'status': 'DENIED'}}),
            'google answered HTTP 403: API key not valid (check the API key: GOOGLE_API_KEY, '
            'threadline keys set google, or --key)',
        ),
        (
            OpenAIChatModel('gpt-x'),
            ModelHTTPError(404, 'gpt-x', {'error': {'message': 'The model `gpt-x` does not exist', 'code': None}}),
            'openai answered HTTP 404: The model `gpt-x` does not exist (check the model name: threadline models '
            'lists known ones)',
        ),
        (
            OpenAIChatModel('gpt-x'),
            ModelHTTPError(502, 'gpt-x', '<html>bad gateway</html>'),
            'openai answered HTTP 502: <html>bad gateway</html> (try again shortly)',
        ),
        (OpenAIChatModel('gpt-x'), ModelHTTPError(400, 'gpt-x', {'weird': [1, 2]}), 'openai answered HTTP 400'),
    ],
)
def test_the_providers_own_message_and_a_hint(model: object, error: ModelHTTPError, line: str) -> None:
    assert model_error_line(error, model) == line


def test_a_long_message_is_cut_and_never_a_raw_dict() -> None:
    error = ModelHTTPError(400, 'gpt-x', {'error': {'message': 'x' * 500, 'param': {'secret': 'nested'}}})
    line = model_error_line(error, OpenAIChatModel('gpt-x'))
    assert line.startswith('openai answered HTTP 400: xxx') and line.endswith('…') and len(line) < 240
    assert '{' not in line and 'nested' not in line
