"""Stateless serving (`threadline serve --stateless`): the history a client hands back is trusted
only with the envelope this server signed it with, and each answer carries the new pair.

Rules (each tested):
- An envelope expires `ttl` after it was issued (default a day); an expired one, or one without
  an expiry, is refused (`UNTRUSTED_HISTORY: expired`). Within that window a client can return an
  older pair it was given (a rollback, see `trust._envelope` for what can and cannot be detected).
- The user turns a client appends after the signed history are sanitized as a server-held
  conversation's new turn is: a `file://` URL, say, never reaches the model.
- The body is split once (`read_body`): the signed `history` and `envelope` stay raw bytes and
  are decoded by the typed message decoder; only the rest becomes Python objects (and is held
  to the nesting limit). The answer embeds the new history as the encoder's bytes, and its
  digest continues from the verified one when the run kept the verified messages as they were.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import msgspec

from threadline.agent import AgentRunResult
from threadline.messages import (
    AgentRunResultEvent,
    AgentStreamEvent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    sanitize_report,
)
from threadline.server._requests import HTTPProblem, check_depth
from threadline.trust import Envelope, Keyring, sign_history, verify_history
from threadline.ui.vercel_ai import ui_message_chunks

__all__ = ['DEFAULT_TTL', 'StatelessBody', 'Verified', 'read_body', 'signed_chunks', 'verified_history']

DEFAULT_TTL = timedelta(days=1)


class _Split(msgspec.Struct):
    id: Any = None
    messages: Any = None
    trigger: Any = None
    messageId: Any = None
    history: msgspec.Raw = msgspec.Raw()
    envelope: msgspec.Raw = msgspec.Raw()


_split = msgspec.json.Decoder(_Split)


@dataclass(frozen=True)
class StatelessBody:
    """A stateless chat body: the fields the chat reads, and the signed pair as raw JSON."""

    fields: dict[str, Any]
    history: bytes
    envelope: bytes


def read_body(raw: bytes) -> StatelessBody:
    """Split a stateless chat body (400 for one that is not a JSON object, or nests too deeply)."""
    try:
        split = _split.decode(raw or b'null')
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        raise HTTPProblem(400, 'the body must be a JSON object') from None
    fields = {name: getattr(split, name) for name in ('id', 'messages', 'trigger', 'messageId')}
    check_depth(fields)
    return StatelessBody(
        {k: v for k, v in fields.items() if v is not None}, bytes(split.history), bytes(split.envelope)
    )


@dataclass(frozen=True)
class Verified:
    """A history a client sent back, checked: its messages and the envelope that vouched for them."""

    messages: list[ModelMessage]
    envelope: Envelope | None  # None on a first turn


def verified_history(body: StatelessBody, cid: str, scope: str, keys: Keyring) -> Verified:
    """The history a stateless client sent back, if its envelope vouches for it (else 400), with
    what the client appended after the signed part sanitized."""
    absent = (b'', b'null')
    if body.history in absent and body.envelope in absent:
        return Verified([], None)  # a first turn
    try:
        history = ModelMessagesTypeAdapter.validate_json(body.history)
        envelope = Envelope.from_json(body.envelope)
    except Exception as exc:  # noqa: BLE001 - any unreadable history is untrusted
        raise HTTPProblem(
            400, f'UNTRUSTED_HISTORY: the history or its envelope cannot be read ({type(exc).__name__})'
        ) from None
    check = verify_history(history, envelope, conversation_id=cid, scope=scope, keys=keys, require_expiry=True)
    if not check.ok:
        at = f' at message {check.index}' if check.index is not None else ''
        raise HTTPProblem(400, f'UNTRUSTED_HISTORY: {check.reason}{at}')
    added, _ = sanitize_report(list(history[envelope.count :]))
    return Verified([*history[: envelope.count], *added], envelope)


async def signed_chunks(
    events: AsyncIterator[AgentStreamEvent | AgentRunResultEvent],
    cid: str,
    scope: str,
    keys: Keyring,
    ttl: timedelta = DEFAULT_TTL,
    request_id: str | None = None,
    verified: Verified | None = None,
) -> AsyncIterator[dict[str, Any]]:
    """The run's UI message chunks, with the new history and its envelope just before `finish`
    (the history as raw JSON bytes, which `sse` writes as they are)."""
    results: list[AgentRunResult[Any]] = []

    async def watched() -> AsyncIterator[AgentStreamEvent | AgentRunResultEvent]:
        async for event in events:
            if isinstance(event, AgentRunResultEvent):
                results.append(event.result)
            yield event

    async for chunk in ui_message_chunks(watched(), request_id=request_id):
        if chunk['type'] == 'finish' and results:
            history = results[0].all_messages()
            envelope = sign_history(
                history,
                conversation_id=cid,
                scope=scope,
                keys=keys,
                expires_in=ttl,
                verified=_unchanged(verified, history),
            )
            data = {
                'history': msgspec.Raw(ModelMessagesTypeAdapter.dump_json(history)),
                'envelope': msgspec.Raw(envelope.to_json()),
            }
            yield {'type': 'data-threadline', 'data': data}
        yield chunk


def _unchanged(verified: Verified | None, history: list[ModelMessage]) -> Envelope | None:
    """The verified envelope, when the new history still opens with the very messages it vouched
    for (a run that repaired or cut them made others: then the digest is computed whole)."""
    if verified is None or verified.envelope is None:
        return None
    count = verified.envelope.count
    signed = verified.messages[:count]
    if len(history) < count or history[:count] != signed:  # identity first, in C; equal values digest alike
        return None
    return verified.envelope
