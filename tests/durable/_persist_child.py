"""A durable run with StepPersistence, which may die inside its tool (for test_dbos.py).

    python -m tests.durable._persist_child DIRECTORY start|recover|clean

`start` runs workflow `turn-1` over a stored first turn; its tool kills the process (SIGKILL) on
its first attempt. `recover` launches DBOS on the same databases, which resumes the workflow.
`clean` runs the same script, never killed. `recover` and `clean` print the stored conversation
(wire JSON) and the ledger; every model request and tool attempt goes to DIRECTORY/log.jsonl.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from dbos import DBOS, SetWorkflowID

from threadline import Agent, ModelMessage, ModelMessagesTypeAdapter, ModelResponse, RunContext, TextPart, ToolCallPart
from threadline.durable import DBOSDurability, dbos_config, durable_history
from threadline.models.function import AgentInfo, FunctionModel
from threadline.storage import SQLiteStore, StepPersistence, annotate_tool_effect

DIRECTORY, COMMAND = Path(sys.argv[1]), sys.argv[2]
LOG = DIRECTORY / 'log.jsonl'
store = SQLiteStore(DIRECTORY / 'store.db')


def log(**entry: object) -> None:
    with LOG.open('a') as f:
        f.write(json.dumps(entry) + '\n')


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    log(kind='model_request', messages=len(messages))
    if isinstance(messages[-1].parts[-1], TextPart) or messages[-1].parts[-1].part_kind == 'user-prompt':
        order = 'A-17' if len(messages) > 2 else 'B-2'
        return ModelResponse(
            parts=[ToolCallPart('send_refund', {'order': order}, tool_call_id=f'call-{len(messages)}')]
        )
    return ModelResponse(parts=[TextPart(f'done after {len(messages)} messages')])


agent = Agent(FunctionModel(model), capabilities=[StepPersistence(store, scope='acme'), DBOSDurability()])


@agent.tool
def send_refund(ctx: RunContext[None], order: str) -> str:
    retry = ctx.crash_retry
    if retry is None:
        annotate_tool_effect(ctx, idempotency_key=f'refund-{order}')
    log(kind='tool', order=order, retry=retry.idempotency_key if retry else None)
    if retry is None and COMMAND == 'start' and order == 'A-17':
        os.kill(os.getpid(), signal.SIGKILL)  # dies inside the tool: its effect unknown
    return f'refund for {order} sent'


@DBOS.workflow(name='refund_turn')
async def refund_turn(prompt: str) -> str:
    history = await durable_history(store, 'refunds', scope='acme')
    result = await agent.run(prompt, message_history=history, conversation_id='refunds', run_id=DBOS.workflow_id)
    return str(result.output)


async def main() -> None:
    DBOS(config=dbos_config(store, name='threadline_test', log_level='WARNING'))
    DBOS.launch()
    if COMMAND in ('start', 'clean'):
        first = await agent.run('refund B-2', conversation_id='refunds')  # an earlier turn, not durable
        assert first.output
        with SetWorkflowID('turn-1'):
            handle = await DBOS.start_workflow_async(refund_turn, 'refund A-17 too')
        output = await handle.get_result()
    else:
        output = await (await DBOS.retrieve_workflow_async('turn-1')).get_result()
    if COMMAND != 'start':
        stored = await store.load('refunds', scope='acme')
        effects = await store.tool_effects('turn-1', scope='acme')
        print(
            json.dumps(
                {
                    'output': output,
                    'messages': json.loads(ModelMessagesTypeAdapter.dump_json(stored.messages)),
                    'ledger': [(e.tool_call_id, e.status, e.idempotency_key) for e in effects],
                    'verified': (await store.verify('refunds', scope='acme')).ok,
                }
            )
        )
    DBOS.destroy()
    store.close()


if __name__ == '__main__':
    asyncio.run(main())
