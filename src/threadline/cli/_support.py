"""The demo's support agent: two tools, a payments destination, and a prompt contract.

The payments "destination" is a JSON-lines file beside the database: the refund tool records its
idempotency key there before anything else can go wrong, exactly like a real payment API would
hold the refund even if the caller crashed before hearing back.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from threadline.agent import Agent, DeferredToolRequests, RunContext
from threadline.models.demo import DemoModel
from threadline.storage import AsyncStore, StepPersistence, SyncStore, annotate_tool_effect

__all__ = ['SUPPORT_PROMPT', 'Payments', 'support_agent']

SUPPORT_PROMPT = 'You are the ACME support agent. Look orders up before answering; refunds need an order number.'
ORDERS = {'42': 'shipped on 2025-01-03, arriving Friday', '7': 'waiting for stock'}


class Payments:
    """A refund destination that can be re-read by idempotency key."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def find(self, idempotency_key: str) -> dict[str, Any] | None:
        if not self.path.exists():
            return None
        for line in self.path.read_text().splitlines():
            record = json.loads(line)
            if record['idempotency_key'] == idempotency_key:
                return dict(record)
        return None

    def refund(self, idempotency_key: str, order_id: str, amount: int) -> dict[str, Any]:
        existing = self.find(idempotency_key)
        if existing is not None:
            return existing
        record = {'idempotency_key': idempotency_key, 'order_id': order_id, 'amount': amount, 'revision': 'pay-1001'}
        with open(self.path, 'a') as handle:
            handle.write(json.dumps(record) + '\n')
            handle.flush()
            os.fsync(handle.fileno())
        return record


def support_agent(
    store: AsyncStore[SyncStore], scope: str, payments: Payments, *, approve_refunds: bool = False
) -> Agent[Any, Any]:
    """The support agent, persisting every step into `store`. With `approve_refunds` a refund
    waits for a person's approval (the run ends with `DeferredToolRequests`)."""
    agent: Agent[Any, Any] = Agent(
        DemoModel(),
        system_prompt=SUPPORT_PROMPT,
        name='acme-support',
        capabilities=[StepPersistence(store, scope=scope)],
        output_type=[str, DeferredToolRequests] if approve_refunds else str,
    )

    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        """Look up an order's status."""
        return f'order {order_id} {ORDERS.get(order_id, "not found")}'

    @agent.tool(requires_approval=approve_refunds, metadata={'external_effects': True})  # the audit asks for proof
    def issue_refund(ctx: RunContext[Any], order_id: str, amount: int) -> str:
        """Refund an order (idempotent: the payments API dedupes on the key)."""
        key = f'refund-{order_id}'
        annotate_tool_effect(ctx, idempotency_key=key, summary=f'refund order {order_id}')
        record = payments.refund(key, order_id, amount)
        if os.environ.get('THREADLINE_DEMO_PAUSE_IN_REFUND'):
            print('IN_REFUND', flush=True)  # the demo kills this process now
            time.sleep(60)
        return f'refunded {record["amount"]} for order {order_id} ({record["revision"]})'

    return agent
