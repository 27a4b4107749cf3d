"""The demo's second process: asks for a refund and is killed inside the refund tool."""

from __future__ import annotations

import sys
from pathlib import Path

from threadline.cli._support import Payments, support_agent
from threadline.storage import open_store


def main() -> None:
    db, conversation_id, scope, payments = sys.argv[1:5]
    store = open_store(db)
    stored = store.sync.load(conversation_id, scope=scope)
    agent = support_agent(store, scope, Payments(Path(payments)))
    result = agent.run_sync('Please refund order 42.', **stored.run_kwargs())
    store.sync.save(result, scope=scope)  # never reached: the parent kills us inside the tool


if __name__ == '__main__':
    main()
