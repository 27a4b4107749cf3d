"""What a durable run cannot do yet is refused with a clear error, and what it can still does:
enqueue (content outside any step) and storing a rewritten history (a replay could not start
where the first attempt did) are refused; a history processor alone keeps working."""

from __future__ import annotations

from pathlib import Path

import pytest
from dbos import DBOS, SetWorkflowID

from threadline import Agent, ModelMessage, ModelRequest, ModelResponse, RunContext, TextPart, ToolCallPart
from threadline.capabilities import KeepLastTurns, ProcessHistory
from threadline.durable import DBOSDurability, durable_history
from threadline.exceptions import UserError
from threadline.models.function import AgentInfo, FunctionModel
from threadline.storage import SQLiteStore, StepPersistence

seen: list[int] = []


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    seen.append(len(messages))
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('note', {}, tool_call_id=f'call-{len(messages)}')])
    return ModelResponse(parts=[TextPart('noted')])


enqueuing = Agent(FunctionModel(model), capabilities=[DBOSDurability()])


@enqueuing.tool
def note(ctx: RunContext[None]) -> str:
    ctx.enqueue('and one more thing')
    return 'noted'


@DBOS.workflow(name='refusals_enqueue')
async def enqueue_turn() -> str:
    return str((await enqueuing.run('note it', run_id=DBOS.workflow_id)).output)


def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    seen.append(len(messages))
    return ModelResponse(parts=[TextPart(f'turn {len(messages)}')])


trimming = Agent(FunctionModel(answer), capabilities=[ProcessHistory(KeepLastTurns(2)), DBOSDurability()])
STORE: list[SQLiteStore] = []


@DBOS.workflow(name='refusals_trim')
async def trim_turn(prompt: str, history_turns: int, persisted: bool) -> str:
    history: list[ModelMessage] = []
    for n in range(history_turns):
        history += [ModelRequest.user_text_prompt(f'earlier {n}'), ModelResponse(parts=[TextPart(f'reply {n}')])]
    if not persisted:
        return str((await trimming.run(prompt, message_history=history, run_id=DBOS.workflow_id)).output)
    store = STORE[0]
    persistence = StepPersistence(store, scope='tenant')
    await store.append('trimmed', history, scope='tenant')
    history = await durable_history(store, 'trimmed', scope='tenant')
    result = await trimming.run(
        prompt, message_history=history, conversation_id='trimmed', run_id=DBOS.workflow_id, capabilities=[persistence]
    )
    return str(result.output)


async def _run(workflow_id: str, workflow: object, *args: object) -> str:
    with SetWorkflowID(workflow_id):
        handle = await DBOS.start_workflow_async(workflow, *args)  # type: ignore[call-overload]
    result: str = await handle.get_result()
    return result


async def test_enqueue_in_a_durable_run_is_refused(dbos: None) -> None:
    with pytest.raises(UserError, match='enqueue is not available in a durable run'):
        await _run('refusals-enqueue-1', enqueue_turn)


async def test_a_history_processor_alone_keeps_working(dbos: None) -> None:
    seen.clear()
    assert await _run('refusals-trim-1', trim_turn, 'now', 3, False) == 'turn 3'
    assert seen == [3]  # what was sent: the last earlier turn and the new prompt


async def test_storing_a_rewritten_history_in_a_durable_run_is_refused(dbos: None, tmp_path: Path) -> None:
    STORE[:] = [SQLiteStore(tmp_path / 'store.db')]
    with pytest.raises(UserError, match='a durable run cannot store a rewritten history yet'):
        await _run('refusals-trim-2', trim_turn, 'now', 3, True)
    assert len((await STORE[0].load('trimmed', scope='tenant')).messages) == 6  # nothing half-written
    STORE[0].close()
