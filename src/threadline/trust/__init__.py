"""Trust for histories a client hands back: signed history envelopes and the keys behind them.

    keys = Keyring.from_env()                      # THREADLINE_TRUST_KEYS=k1=<hex>,...
    envelope = sign_history(result.all_messages(), conversation_id=cid, scope=tenant, keys=keys)
    # ... send history and envelope to the client; it sends both back with its next message ...
    check = verify_history(history, envelope, conversation_id=cid, scope=tenant, keys=keys)
    if not check.ok: refuse(check.reason)          # 'edited', 'truncated', 'inserted_tool_call', ...

`AuditContext(source='client', envelope=..., keys=...)` makes a valid envelope pass the audit's
authority gate. See `_envelope.py` for the canonical form and exactly what is accepted.
"""

from __future__ import annotations

from threadline._public import publish
from threadline.trust._envelope import REASONS, Envelope, Verification, history_digest, sign_history, verify_history
from threadline.trust._keys import Keyring, SigningKey

__all__ = [
    'REASONS',
    'Envelope',
    'Keyring',
    'SigningKey',
    'Verification',
    'history_digest',
    'sign_history',
    'verify_history',
]

publish(__name__, globals(), __all__)  # after every name above exists
