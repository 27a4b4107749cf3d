"""The agent `threadline serve --durable --agent tests.server._durable_agent:agent` runs in
test_durable_serve.py: a model that calls `ship` when asked to ship, then answers; `ship` marks that it began,
waits for DIRECTORY/go, and applies its effect once per idempotency key (looked up on a retry);
`refund` needs an approval.
Every model request answered is logged with the pid of the server that answered it."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from threadline import (
    Agent,
    DeferredToolRequests,
    ModelMessage,
    ModelResponse,
    RunContext,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.models.function import AgentInfo, FunctionModel

DIRECTORY = Path(os.environ['THREADLINE_TEST_DIRECTORY'])


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    with (DIRECTORY / 'requests.log').open('a') as log:
        log.write(f'{len(messages)} {os.getpid()}\n')
    asked = ' '.join(str(p.content) for p in messages[-1].parts if isinstance(p, UserPromptPart))
    if 'refund' in asked:
        return ModelResponse(parts=[ToolCallPart('refund', {'order': 'A-17'}, tool_call_id='refund-1')])
    if 'ship' in asked:
        return ModelResponse(parts=[ToolCallPart('ship', {'order': 'A-17'}, tool_call_id=f'call-{len(messages)}')])
    returned = [p.content for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
    if returned:
        return ModelResponse(parts=[TextPart('A-17 is on its way' if 'shipped' in str(returned) else str(returned[0]))])
    return ModelResponse(parts=[TextPart('hello')])


agent = Agent(FunctionModel(model), output_type=[str, DeferredToolRequests])


@agent.tool
def ship(ctx: RunContext[None], order: str) -> str:
    key = ctx.crash_retry.idempotency_key if ctx.crash_retry else f'{ctx.run_id}/{ctx.tool_call_id}'
    (DIRECTORY / f'started-{os.getpid()}').write_text(key)
    while not (DIRECTORY / 'go').exists():
        time.sleep(0.05)
    effects = sqlite3.connect(DIRECTORY / 'effects.db', isolation_level=None)
    effects.execute('CREATE TABLE IF NOT EXISTS applied (key TEXT PRIMARY KEY, times INTEGER NOT NULL)')
    effects.execute(
        'INSERT INTO applied VALUES (?, 1) ON CONFLICT (key) DO UPDATE SET times = times + ?',
        (key, 0 if ctx.crash_retry else 1),  # a retry looks the effect up: applied already, not again
    )
    effects.close()
    return f'{order} shipped'


@agent.tool_plain(requires_approval=True)
def refund(order: str) -> str:
    return f'{order} refunded'
