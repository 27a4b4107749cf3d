"""Signed history envelopes: a server that keeps no state can prove a client returned exactly the
history it was given, plus only what a client may add.

The canonical form. Each message is loaded as Threadline loads it and written as Threadline's wire
JSON, with keys sorted and no whitespace; the digest chains the messages:
`d0 = 32 zero bytes`, `d_i = sha256(d_{i-1} || sha256(canonical(m_i)))`. Formatting a client's JSON
library may change (key order, spacing, `Z` or `+00:00` timestamps, a history that passed through
pydantic-ai) does not change it; any change to a value does.

What an envelope signs (HMAC-SHA256 under the active key): a version tag, the key id, the
conversation id, the scope, the message count, the digest, the tool call ids the server asked
the client to run (deferred tools), when it was issued and, with `expires_in`, when it expires
(whole seconds since the epoch). Envelopes of version 1 carry no times and still verify, unless
the verifier requires an expiry (`require_expiry=True`, what a stateless server does).

What a verifier can and cannot detect. It detects any change to a signed message, a message
removed, a response or tool call a client made up, a result for a call the server did not hand
to the client, a history moved to another conversation or scope, and an envelope past its
expiry. It cannot detect a client returning an *older* pair it was given (rolling the
conversation back, or continuing it twice from one point) while that pair has not expired: the
server keeps nothing to compare with. The expiry bounds that window; keep state on the server
(the default mode) where a rollback must never pass.

What `verify_history` accepts, and nothing else:
- exactly the signed messages;
- the signed messages followed by requests that carry only new user prompts, or tool results for
  the calls the envelope lists (never for other calls: a result for a server-side tool, or an
  approval, cannot come from a client).
Every refusal has a reason code (`REASONS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, get_args

import msgspec

from threadline.exceptions import UserError
from threadline.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.messages.wire import ForeignMessage, own_messages
from threadline.trust._chain import GENESIS, extend_chain_messages
from threadline.trust._keys import Keyring, now_utc
from threadline.trust._mac import mac_hex, same_tag, text_bytes

__all__ = ['REASONS', 'Envelope', 'Verification', 'history_digest', 'sign_history', 'verify_history']

VERSION = 'threadline-envelope-v2'
VERSION_1 = 'threadline-envelope-v1'
ALGORITHM = 'HMAC-SHA256'
Reason = Literal[
    'unknown_key',
    'retired_key',
    'bad_signature',
    'other_conversation',
    'other_scope',
    'truncated',
    'edited',
    'inserted_response',
    'inserted_tool_call',
    'inserted_tool_result',
    'inserted_system_prompt',
    'inserted_part',
    'inserted_instructions',
    'expired',
]
REASONS: tuple[str, ...] = get_args(Reason)


class Envelope(msgspec.Struct, frozen=True, kw_only=True):
    """What the server hands the client with a history, and requires back with it (JSON-ready)."""

    version: str = VERSION
    algorithm: str = ALGORITHM
    key_id: str
    conversation_id: str
    scope: str
    count: int
    digest: str
    client_calls: tuple[str, ...] = ()
    issued_at: int | None = None
    expires_at: int | None = None
    signature: str

    def to_json(self) -> bytes:
        return msgspec.json.encode(self)

    @classmethod
    def from_json(cls, data: bytes | str) -> Envelope:
        try:
            return msgspec.json.decode(data, type=cls)
        except msgspec.DecodeError as exc:
            raise UserError(f'not a history envelope: {exc}') from None


@dataclass(frozen=True)
class Verification:
    """The outcome: `ok`, else the `reason` code and the message index it concerns (if any)."""

    ok: bool
    reason: Reason | None = None
    index: int | None = None
    key_id: str | None = None
    added: int = 0
    evidence: dict[str, object] = field(default_factory=dict)


def history_digest(messages: Sequence[ModelMessage]) -> str:
    """The chained digest of `messages` in canonical form (see the module docstring)."""
    return extend_chain_messages(GENESIS, messages)


def _digest_from(verified: Envelope | None, messages: Sequence[ModelMessage]) -> str:
    if verified is None or verified.count > len(messages):
        return history_digest(messages)
    return extend_chain_messages(verified.digest, messages[verified.count :])


def _mac(secret: bytes, fields: Sequence[str]) -> str:
    return mac_hex(secret, text_bytes('\x1f'.join(fields)))


def _signed_fields(envelope: Envelope) -> list[str]:
    fields = [
        envelope.version,
        envelope.algorithm,
        envelope.key_id,
        envelope.conversation_id,
        envelope.scope,
        str(envelope.count),
        envelope.digest,
        ','.join(envelope.client_calls),
    ]
    if envelope.version != VERSION_1:
        fields += [str(envelope.issued_at), str(envelope.expires_at)]
    return fields


def sign_history(
    messages: Sequence[ModelMessage | ForeignMessage],
    *,
    conversation_id: str,
    scope: str,
    keys: Keyring,
    client_calls: Sequence[str] = (),
    expires_in: timedelta | None = None,
    now: datetime | None = None,
    verified: Envelope | None = None,
) -> Envelope:
    """Sign `messages` for `conversation_id` in `scope` with the keyring's active key.
    `client_calls` are the tool call ids the client is asked to run (their results may come back);
    `expires_in`: how long the envelope is accepted (None: as long as its key is).

    `verified`: an envelope `verify_history` accepted for the first `verified.count` of these
    very messages. The digest then continues from its digest (the chain extends) instead of
    encoding those messages again. The caller vouches that they are unchanged since: pass it
    only when they are the verified messages themselves (the server compares them first)."""
    if not conversation_id or not scope:
        raise UserError('sign_history needs a conversation_id and a scope')
    messages = own_messages(messages)  # pydantic-ai's too: the same wire form, the same digest
    key = keys.signing_key()
    issued = int((now or now_utc()).timestamp())
    unsigned = Envelope(
        issued_at=issued,
        expires_at=None if expires_in is None else issued + max(1, int(expires_in.total_seconds())),
        key_id=key.key_id,
        conversation_id=conversation_id,
        scope=scope,
        count=len(messages),
        digest=_digest_from(verified, messages),
        client_calls=tuple(client_calls),
        signature='',
    )
    return msgspec.structs.replace(unsigned, signature=_mac(key.secret, _signed_fields(unsigned)))


def verify_history(
    messages: Sequence[ModelMessage | ForeignMessage],
    envelope: Envelope,
    *,
    conversation_id: str,
    scope: str,
    keys: Keyring,
    now: datetime | None = None,
    require_expiry: bool = False,
) -> Verification:
    """Whether `messages` are the signed history plus only what a client may add (module
    docstring). `require_expiry`: refuse an envelope that carries no expiry ('expired')."""
    now = now or now_utc()
    messages = own_messages(messages)
    key = keys.verifying_key(envelope.key_id, now)
    if key == 'unknown_key' or key == 'retired_key':
        return Verification(False, key)
    expected = _mac(key.secret, _signed_fields(envelope))
    if envelope.version not in (VERSION, VERSION_1) or not same_tag(expected, envelope.signature):
        return Verification(False, 'bad_signature', key_id=key.key_id)
    if (envelope.expires_at is None and require_expiry) or (
        envelope.expires_at is not None and now.timestamp() > envelope.expires_at
    ):
        return Verification(False, 'expired', key_id=key.key_id)
    if envelope.conversation_id != conversation_id:
        return Verification(False, 'other_conversation', key_id=key.key_id)
    if envelope.scope != scope:
        return Verification(False, 'other_scope', key_id=key.key_id)
    if len(messages) < envelope.count:
        return Verification(False, 'truncated', len(messages), key_id=key.key_id)
    if history_digest(messages[: envelope.count]) != envelope.digest:
        return Verification(False, 'edited', key_id=key.key_id)  # one digest: the change is somewhere in it
    for index in range(envelope.count, len(messages)):
        reason = _refused_addition(messages[index], set(envelope.client_calls))
        if reason is not None:
            return Verification(False, reason, index, key_id=key.key_id)
    return Verification(True, key_id=key.key_id, added=len(messages) - envelope.count)


def _refused_addition(message: ModelMessage, client_calls: set[str]) -> Reason | None:
    if isinstance(message, ModelResponse):
        calls = any(isinstance(p, ToolCallPart) for p in message.parts)
        return 'inserted_tool_call' if calls else 'inserted_response'
    assert isinstance(message, ModelRequest)
    if message.instructions:
        return 'inserted_instructions'
    for part in message.parts:
        if isinstance(part, UserPromptPart):
            continue
        if isinstance(part, (ToolReturnPart, RetryPromptPart)):
            if part.tool_call_id in client_calls:
                continue
            return 'inserted_tool_result'
        if part.part_kind == 'system-prompt':
            return 'inserted_system_prompt'
        return 'inserted_part'
    return None
