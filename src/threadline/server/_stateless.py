"""Stateless serving (`threadline serve --stateless`): the history a client hands back is trusted
only with the envelope this server signed it with, and each answer carries the new pair."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from threadline.agent import AgentRunResult
from threadline.messages import AgentRunResultEvent, AgentStreamEvent, ModelMessage, ModelMessagesTypeAdapter
from threadline.server._requests import HTTPProblem
from threadline.trust import Envelope, Keyring, sign_history, verify_history
from threadline.ui.vercel_ai import ui_message_chunks

__all__ = ['signed_chunks', 'verified_history']


def verified_history(body: object, cid: str, scope: str, keys: Keyring) -> list[ModelMessage]:
    """The history a stateless client sent back, if its envelope vouches for it (else 400)."""

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
    check = verify_history(history, envelope, conversation_id=cid, scope=scope, keys=keys)
    if not check.ok:
        at = f' at message {check.index}' if check.index is not None else ''
        raise HTTPProblem(400, f'UNTRUSTED_HISTORY: {check.reason}{at}')
    return list(history)


async def signed_chunks(
    events: AsyncIterator[AgentStreamEvent | AgentRunResultEvent], cid: str, scope: str, keys: Keyring
) -> AsyncIterator[dict[str, Any]]:
    """The run's UI message chunks, with the new history and its envelope just before `finish`."""
    results: list[AgentRunResult[Any]] = []

    async def watched() -> AsyncIterator[AgentStreamEvent | AgentRunResultEvent]:
        async for event in events:
            if isinstance(event, AgentRunResultEvent):
                results.append(event.result)
            yield event

    async for chunk in ui_message_chunks(watched()):
        if chunk['type'] == 'finish' and results:
            history = results[0].all_messages()
            envelope = sign_history(history, conversation_id=cid, scope=scope, keys=keys)
            data = {
                'history': json.loads(ModelMessagesTypeAdapter.dump_json(history)),
                'envelope': json.loads(envelope.to_json()),
            }
            yield {'type': 'data-threadline', 'data': data}
        yield chunk
