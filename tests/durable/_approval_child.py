"""A durable run that pauses for approval, in a process the test may kill (for test_approval.py).

    python -m tests.durable._approval_child DIRECTORY start|approve|deny

`start` starts workflow `approve-1`: its run asks to refund an order, a call that needs approval,
so the workflow waits; the test kills the process while it does. `approve` / `deny` launch DBOS on
the same system database (which resumes the workflow to its wait), answer, and print the output
and the stored conversation. Model requests and tool calls go to DIRECTORY/log.jsonl.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from dbos import DBOS, SetWorkflowID

from threadline import Agent, DeferredToolRequests, ModelMessage, ModelResponse, TextPart, ToolCallPart
from threadline.durable import DBOSDurability, dbos_config, durable_history, send_approval, wait_for_approval
from threadline.models.function import AgentInfo, FunctionModel
from threadline.storage import SQLiteStore, StepPersistence

DIRECTORY, COMMAND = Path(sys.argv[1]), sys.argv[2]
store = SQLiteStore(DIRECTORY / 'store.db')


def log(**entry: object) -> None:
    with (DIRECTORY / 'log.jsonl').open('a') as f:
        f.write(json.dumps(entry | {'pid': os.getpid()}) + '\n')


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    log(kind='model_request', messages=len(messages))
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('refund', {'order': 'A-17'}, tool_call_id='r1')])
    return ModelResponse(parts=[TextPart('done')])


agent = Agent(
    FunctionModel(model),
    output_type=[str, DeferredToolRequests],
    capabilities=[StepPersistence(store, scope='shop'), DBOSDurability()],
)


@agent.tool_plain(requires_approval=True)
def refund(order: str) -> str:
    log(kind='tool', order=order)
    return f'refunded {order}'


@DBOS.workflow(name='approval_turn')
async def approval_turn(prompt: str) -> str:
    history = await durable_history(store, 'refunds', scope='shop')
    result = await agent.run(prompt, message_history=history, conversation_id='refunds', run_id=DBOS.workflow_id)
    answered = 0
    while isinstance(result.output, DeferredToolRequests):
        log(kind='waiting')
        answers = await wait_for_approval(result.output)
        answered += 1
        result = await agent.run(
            message_history=result.all_messages(),
            deferred_tool_results=answers,
            conversation_id='refunds',
            run_id=f'{DBOS.workflow_id}/answered-{answered}',
        )
    return str(result.output)


async def main() -> None:
    DBOS(config=dbos_config(store, name='threadline_approvals', log_level='WARNING'))
    DBOS.launch()
    if COMMAND == 'start':
        with SetWorkflowID('approve-1'):
            handle = await DBOS.start_workflow_async(approval_turn, 'refund order A-17')
        await handle.get_result()  # never: the test kills this process while the workflow waits
    await send_approval('approve-1', {'r1': COMMAND == 'approve'})
    output = await (await DBOS.retrieve_workflow_async('approve-1')).get_result()
    stored = await store.load('refunds', scope='shop')
    kinds = [[part.part_kind for part in message.parts] for message in stored.messages]
    print(json.dumps({'output': output, 'kinds': kinds, 'verified': (await store.verify('refunds', scope='shop')).ok}))
    DBOS.destroy()
    store.close()


if __name__ == '__main__':
    asyncio.run(main())
