"""Stateless serving (`threadline serve --stateless`): the history a client hands back is trusted
only with the envelope this server signed it with, and each answer carries the new pair.

Rules (each tested):
- An envelope expires `ttl` after it was issued (default a day); an expired one, or one without
  an expiry, is refused (`UNTRUSTED_HISTORY: expired`). Within that window a client can return an
  older pair it was given (a rollback, see `trust._envelope` for what can and cannot be detected).
- The user turns a client appends after the signed history are sanitized as a server-held
  conversation's new turn is: a `file://` URL, say, never reaches the model.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from threadline.agent import AgentRunResult
from threadline.messages import (
    AgentRunResultEvent,
    AgentStreamEvent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    sanitize_report,
)
from threadline.server._requests import HTTPProblem
from threadline.trust import Envelope, Keyring, sign_history, verify_history
from threadline.ui.vercel_ai import ui_message_chunks

__all__ = ['DEFAULT_TTL', 'signed_chunks', 'verified_history']

DEFAULT_TTL = timedelta(days=1)


def verified_history(body: object, cid: str, scope: str, keys: Keyring) -> list[ModelMessage]:
    """The history a stateless client sent back, if its envelope vouches for it (else 400), with
    what the client appended after the signed part sanitized."""

    if not isinstance(body, dict):
        raise HTTPProblem(400, 'the body must be a JSON object')
    if body.get('history') is None and body.get('envelope') is None:
        return []  # a first turn
    try:
        history = ModelMessagesTypeAdapter.validate_python(body.get('history'))
        envelope = Envelope.from_json(json.dumps(body.get('envelope')))
    except Exception as exc:  # noqa: BLE001 - any unreadable history is untrusted
        raise HTTPProblem(
            400, f'UNTRUSTED_HISTORY: the history or its envelope cannot be read ({type(exc).__name__})'
        ) from None
    check = verify_history(history, envelope, conversation_id=cid, scope=scope, keys=keys, require_expiry=True)
    if not check.ok:
        at = f' at message {check.index}' if check.index is not None else ''
        raise HTTPProblem(400, f'UNTRUSTED_HISTORY: {check.reason}{at}')
    added, _ = sanitize_report(list(history[envelope.count :]))
    return [*history[: envelope.count], *added]


async def signed_chunks(
    events: AsyncIterator[AgentStreamEvent | AgentRunResultEvent],
    cid: str,
    scope: str,
    keys: Keyring,
    ttl: timedelta = DEFAULT_TTL,
    request_id: str | None = None,
) -> AsyncIterator[dict[str, Any]]:
    """The run's UI message chunks, with the new history and its envelope just before `finish`."""
    results: list[AgentRunResult[Any]] = []

    async def watched() -> AsyncIterator[AgentStreamEvent | AgentRunResultEvent]:
        async for event in events:
            if isinstance(event, AgentRunResultEvent):
                results.append(event.result)
            yield event

    async for chunk in ui_message_chunks(watched(), request_id=request_id):
        if chunk['type'] == 'finish' and results:
            history = results[0].all_messages()
            envelope = sign_history(history, conversation_id=cid, scope=scope, keys=keys, expires_in=ttl)
            data = {
                'history': json.loads(ModelMessagesTypeAdapter.dump_json(history)),
                'envelope': json.loads(envelope.to_json()),
            }
            yield {'type': 'data-threadline', 'data': data}
        yield chunk
