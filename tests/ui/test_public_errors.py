"""What a chat client reads when a run fails: a short reason from the error's kind (rate limited,
unreachable, a key to fix...), never the error's own text, which can carry the prompt or a tool's
arguments. Tested through the Vercel AI stream a client reads."""

from __future__ import annotations

import json
from typing import Any

import pytest

from threadline import Agent
from threadline.exceptions import (
    BackendError,
    ModelConnectionError,
    ModelHTTPError,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from threadline.messages import ModelResponse
from threadline.models.function import AgentInfo, FunctionModel
from threadline.ui._errors import public_error
from threadline.ui.vercel_ai import ui_message_chunks

SECRET = 'card 4111-1111'


@pytest.mark.parametrize(
    ('error', 'reason'),
    [
        (ModelHTTPError(429, 'gpt', body={'echo': SECRET}), 'The model is rate limited: try again shortly.'),
        (
            ModelHTTPError(401, 'gpt', body=SECRET),
            "The model refused the server's credentials (a key to fix on the server).",
        ),
        (ModelHTTPError(503, 'gpt', body=SECRET), 'The model provider failed (HTTP 503): try again shortly.'),
        (ModelHTTPError(400, 'gpt', body=SECRET), 'The model refused the request (HTTP 400).'),
        (ModelConnectionError('gpt', f'cannot reach {SECRET}'), 'The model could not be reached: try again shortly.'),
        (UsageLimitExceeded(SECRET, limit='request_limit'), 'The run reached its usage limit (request_limit).'),
        (UnexpectedModelBehavior(SECRET), 'The model answered in a way the run cannot use.'),
        (BackendError(SECRET), 'The store failed: try again shortly.'),
        (RuntimeError(SECRET), 'The run failed.'),
    ],
)
async def test_a_failed_run_says_why_without_its_text(error: Exception, reason: str) -> None:
    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        raise error

    chunks = [c async for c in ui_message_chunks(Agent(FunctionModel(model)).run_stream_events(SECRET))]
    assert [c for c in chunks if c['type'] == 'error'] == [{'type': 'error', 'errorText': reason}]
    assert '4111' not in json.dumps(chunks)


def test_detail_is_the_callers_choice() -> None:
    assert public_error(ModelHTTPError(429, 'gpt'), detail=True).startswith('ModelHTTPError: status_code: 429')
