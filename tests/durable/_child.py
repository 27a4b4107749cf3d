"""A process that runs one durable Threadline run and may die in it (for test_dbos.py).

    python -m tests.durable._child DIRECTORY start|recover sqlite|postgres

`start` starts workflow `turn-1`, whose tool kills the process (SIGKILL) on its first attempt;
`recover` launches DBOS on the same system database, which resumes the workflow, and prints its
output. Every model request and tool attempt is appended to DIRECTORY/log.jsonl.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from dbos import DBOS, SetWorkflowID

from threadline import Agent, ModelMessage, ModelResponse, RunContext, TextPart, ToolCallPart
from threadline.durable import DBOSDurability, dbos_config
from threadline.models.function import AgentInfo, FunctionModel
from threadline.storage import AsyncStore, PostgresStore, SQLiteStore, SyncStore

DIRECTORY = Path(sys.argv[1])
LOG = DIRECTORY / 'log.jsonl'


def log(**entry: object) -> None:
    with LOG.open('a') as f:
        f.write(json.dumps(entry) + '\n')


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    log(kind='model_request', messages=len(messages), pid=os.getpid())
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('send_refund', {'order': 'A-17'}, tool_call_id='call-1')])
    return ModelResponse(parts=[TextPart('refunded A-17')])


agent = Agent(FunctionModel(model), name='refunds', capabilities=[DBOSDurability()])


@agent.tool
def send_refund(ctx: RunContext[None], order: str) -> str:
    retry = ctx.crash_retry
    log(kind='tool', order=order, retry=retry.idempotency_key if retry else None, pid=os.getpid())
    if retry is None:
        os.kill(os.getpid(), signal.SIGKILL)  # the process dies inside the tool, its effect unknown
    return f'refund for {order} sent once (key {retry.idempotency_key if retry else None})'


@DBOS.workflow(name='refund_turn')
async def refund_turn(prompt: str) -> str:
    result = await agent.run(prompt, conversation_id='refund-conversation', run_id=DBOS.workflow_id)
    return result.output


async def main(command: str) -> None:
    if sys.argv[3] == 'postgres':  # DBOS's tables in the store's own database, a schema of their own
        store: AsyncStore[SyncStore] = PostgresStore(os.environ['THREADLINE_TEST_POSTGRES_URL'])
    else:  # a SQLite file beside the store's
        store = SQLiteStore(DIRECTORY / 'store.db')
    DBOS(config=dbos_config(store, name='threadline_test', log_level='WARNING'))
    DBOS.launch()
    if command == 'start':
        with SetWorkflowID('turn-1'):
            handle = await DBOS.start_workflow_async(refund_turn, 'refund order A-17')
        await handle.get_result()
    else:
        handle = await DBOS.retrieve_workflow_async('turn-1')
        print(json.dumps({'output': await handle.get_result()}))
    DBOS.destroy()
    store.close()


if __name__ == '__main__':
    asyncio.run(main(sys.argv[2]))
