"""Conformance suite for conversation stores: subclass it in your tests and provide `make_store`.

    class TestMyStore(ConversationStoreConformance):
        def make_store(self):
            return AsyncStore(MyBackend(...))

Implement the `SyncStore` Protocol (the single definition of every operation), wrap it with
`AsyncStore(...)`, and run this suite against it. Needs pytest.
"""

from __future__ import annotations

from threadline.storage.testing._kit import ConversationStoreConformance, turn

__all__ = ['ConversationStoreConformance', 'turn']
