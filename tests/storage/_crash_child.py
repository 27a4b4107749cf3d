"""Child process of the crash test: a multi-turn conversation with a tool, persisted step by step.

Prints `saved <turn> <length>` after each turn is saved, and `tool-start <run> <call>` /
`tool-end <run> <call>` around the tool body, so the parent knows what was reported when it kills.
With a kill point (`<turn> <point>`: `start`, `model`, `tool` or `saved`) the child prints
`at-kill-point` when it gets there and waits to be killed, so every trial dies exactly where the
parent chose.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from threadline import (
    Agent,
    ModelRequest,
    ModelResponse,
    RunContext,
    TextPart,
    ToolCallPart,
    UsageLimits,
    UserPromptPart,
)
from threadline.models.function import AgentInfo, FunctionModel
from threadline.storage import StepPersistence, annotate_tool_effect, open_store

KILL: tuple[int, str] | None = None
TURN = 0


def maybe_die(point: str) -> None:
    if (TURN, point) == KILL:
        print('at-kill-point', flush=True)
        time.sleep(120)  # the parent kills us here
        sys.exit(3)


def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
    maybe_die('model')
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(isinstance(p, UserPromptPart) for p in last.parts):
        return ModelResponse(parts=[ToolCallPart('refund', {'order': f'o{len(messages)}'}, f'call-{len(messages)}')])
    return ModelResponse(parts=[TextPart('refund done')])


NO_LIMIT = UsageLimits(request_limit=None)  # usage= carries the conversation total; let it grow


def main() -> None:
    global KILL, TURN
    target, conversation_id = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 4:
        KILL = (int(sys.argv[3]), sys.argv[4])
    store = open_store(target)
    agent = Agent(FunctionModel(respond), capabilities=[StepPersistence(store, scope='crash')])

    @agent.tool
    def refund(ctx: RunContext[Any], order: str) -> str:
        print(f'tool-start {ctx.run_id} {ctx.tool_call_id}', flush=True)
        annotate_tool_effect(ctx, idempotency_key=f'refund-{order}')
        maybe_die('tool')
        print(f'tool-end {ctx.run_id} {ctx.tool_call_id}', flush=True)
        return f'refunded {order}'

    for turn in range(1000):
        TURN = turn
        maybe_die('start')
        state = store.sync.conversation_state(conversation_id, scope='crash')
        if state is None:
            result = agent.run_sync(f'turn {turn}', conversation_id=conversation_id, usage_limits=NO_LIMIT)
        else:
            stored = store.sync.load(conversation_id, scope='crash')
            result = agent.run_sync(f'turn {turn}', usage_limits=NO_LIMIT, **stored.run_kwargs())
        store.sync.save(result, scope='crash')
        length = store.sync.load(conversation_id, scope='crash').length
        print(f'saved {turn} {length}', flush=True)
        maybe_die('saved')


if __name__ == '__main__':
    main()
