"""What a store needs from trust to keep its records tamper-evident: the hash chain over stored
messages (`GENESIS`, `extend_chain_messages` for a write, `extend_chain` for stored JSON, `canonical_json`), the keyed seal over each write with its tip
book (`StoreSeal`, `TipBook`, `Tip`, `Link`, `Walk`, `Problem`), and where the per-install key
lives (`threadline_home`). The backends call these; none of them computes a MAC itself."""

from __future__ import annotations

from threadline.trust._chain import GENESIS, canonical_json, extend_chain, extend_chain_messages
from threadline.trust._seal import (
    GENESIS_TAG,
    Link,
    Problem,
    StoreSeal,
    Tip,
    TipBook,
    Walk,
    fact_digest,
    threadline_home,
)

__all__ = [
    'GENESIS',
    'GENESIS_TAG',
    'Link',
    'Problem',
    'StoreSeal',
    'Tip',
    'TipBook',
    'Walk',
    'canonical_json',
    'extend_chain',
    'extend_chain_messages',
    'fact_digest',
    'threadline_home',
]
