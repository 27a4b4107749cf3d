"""A pydantic-ai `Agent` with pydantic-ai's own `DBOSDurability` and Threadline's pydantic-ai
`StepPersistence`, in a process that may die in its tool (for test_beside_pydantic_ai.py).

    python -m tests.durable._pa_child DIRECTORY start|recover|clean

`start` starts workflow `pa-turn`, whose tool kills the process (SIGKILL) on its first attempt;
`recover` launches DBOS on the same system database, which resumes it; `clean` runs the same turn
in workflow `pa-clean` and is never killed. `recover` and `clean` print the output, the stored
conversation, the ledger and the store's verdict. Every model request and tool attempt is
appended to DIRECTORY/log.jsonl.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent, ModelMessage, ModelResponse, RunContext, TextPart, ToolCallPart
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.models.function import AgentInfo, FunctionModel

from threadline.durable import dbos_config
from threadline.pydantic_ai import StepPersistence
from threadline.storage import SQLiteStore

DIRECTORY, COMMAND = Path(sys.argv[1]), sys.argv[2]
WORKFLOW = 'pa-clean' if COMMAND == 'clean' else 'pa-turn'
store = SQLiteStore(DIRECTORY / 'store.db')


def log(**entry: object) -> None:
    with (DIRECTORY / 'log.jsonl').open('a') as f:
        f.write(json.dumps(entry | {'pid': os.getpid(), 'command': COMMAND}) + '\n')


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    log(kind='model_request', messages=len(messages))
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('send_refund', {'order': 'A-17'}, tool_call_id='call-1')])
    return ModelResponse(parts=[TextPart('refunded A-17')])


agent = Agent(
    FunctionModel(model),
    name='refunds',
    capabilities=[StepPersistence(store, scope='shop', allow_unknown_effects=True), DBOSDurability()],
)


@agent.tool
def send_refund(ctx: RunContext[None], order: str) -> str:
    log(kind='tool', order=order)
    if COMMAND == 'start':
        os.kill(os.getpid(), signal.SIGKILL)  # the process dies inside the tool, its effect unknown
    return f'refund for {order} sent'


@DBOS.workflow(name='pa_refund_turn')
async def refund_turn(prompt: str, conversation_id: str) -> str:
    result = await agent.run(prompt, conversation_id=conversation_id)
    return result.output


async def main() -> None:
    DBOS(config=dbos_config(store, name='threadline_pa_durable', log_level='WARNING'))
    DBOS.launch()
    conversation = f'conversation-{WORKFLOW}'
    if COMMAND in ('start', 'clean'):
        with SetWorkflowID(WORKFLOW):
            handle = await DBOS.start_workflow_async(refund_turn, 'refund order A-17', conversation)
        output = await handle.get_result()
    else:
        output = await (await DBOS.retrieve_workflow_async(WORKFLOW)).get_result()
    stored = await store.load(conversation, scope='shop')
    runs = await store.find_runs(scope='shop', conversation_id=conversation)
    report = {
        'output': output,
        'kinds': [[part.part_kind for part in message.parts] for message in stored.messages],
        'runs': len(runs),
        'ledger': [
            (e.tool_call_id, e.status) for run in runs for e in await store.tool_effects(run.run_id, scope='shop')
        ],
        'verified': (await store.verify(conversation, scope='shop')).ok,
    }
    print(json.dumps(report))
    DBOS.destroy()
    store.close()


if __name__ == '__main__':
    asyncio.run(main())
