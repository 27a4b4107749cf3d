"""Child process of the pydantic-ai crash test: a real pydantic-ai Agent with Threadline's
StepPersistence, a multi-turn conversation with a tool (the same protocol of printed lines and
kill points as `tests/storage/_crash_child.py`, whose parent runs both)."""

from __future__ import annotations

import sys
import time
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from threadline.pydantic_ai import StepPersistence, load_history
from threadline.storage import annotate_tool_effect, open_store

KILL: tuple[int, str] | None = None
TURN = 0


def maybe_die(point: str) -> None:
    if (TURN, point) == KILL:
        print('at-kill-point', flush=True)
        time.sleep(120)  # the parent kills us here
        sys.exit(3)


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    maybe_die('model')
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(isinstance(p, UserPromptPart) for p in last.parts):
        return ModelResponse(parts=[ToolCallPart('refund', {'order': f'o{len(messages)}'}, f'call-{len(messages)}')])
    return ModelResponse(parts=[TextPart('refund done')])


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
        annotate_tool_effect(idempotency_key=f'refund-{order}')
        maybe_die('tool')
        print(f'tool-end {ctx.run_id} {ctx.tool_call_id}', flush=True)
        return f'refunded {order}'

    limits = UsageLimits(request_limit=None)
    for turn in range(1000):
        TURN = turn
        maybe_die('start')
        if store.sync.conversation_state(conversation_id, scope='crash') is None:
            result = agent.run_sync(f'turn {turn}', conversation_id=conversation_id, usage_limits=limits)
        else:
            history = load_history(store, conversation_id, scope='crash')
            result = agent.run_sync(f'turn {turn}', usage_limits=limits, **history.run_kwargs())
        store.sync.save(result, scope='crash')  # StepPersistence stored it: this adds nothing
        length = store.sync.load(conversation_id, scope='crash').length
        print(f'saved {turn} {length}', flush=True)
        maybe_die('saved')


if __name__ == '__main__':
    main()
