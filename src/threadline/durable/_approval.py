"""A paused run that waits as a durable workflow: `wait_for_approval` and `send_approval`.

A run that stops on tool calls needing approval ends with `DeferredToolRequests`. Inside a DBOS
workflow, `await wait_for_approval(result.output)` parks the workflow on DBOS's durable message
queue (topic `threadline.approval`) until `send_approval(workflow_id, {...})` answers, from any
process on the same system database, minutes or days later. A process that dies meanwhile loses
nothing: on restart DBOS replays the workflow to the same wait (the run before it comes from its
checkpoints), and the answer, once sent, is delivered exactly once. Then the workflow continues the
run with the results:

    result = await agent.run(prompt, message_history=history, conversation_id=cid, run_id=DBOS.workflow_id)
    answered = 0
    while isinstance(result.output, DeferredToolRequests):
        answers = await wait_for_approval(result.output, timeout=timedelta(days=7))
        answered += 1
        result = await agent.run(
            message_history=result.all_messages(),
            deferred_tool_results=answers,
            conversation_id=cid,
            run_id=f'{DBOS.workflow_id}/answered-{answered}',  # deterministic: the same on a replay
        )

Rules:
- An answer maps every tool call id waiting for approval to `True` (approved) or `False` (denied);
  `send_approval` refuses anything else before it is sent, and `wait_for_approval` refuses an
  answer that leaves a call unanswered or names a call that is not waiting (a `UserError` naming
  the ids: the workflow fails rather than guessing).
- No answer within `timeout` is a `TimeoutError` (with StepPersistence, the history up to the
  pause is stored).
- Every run in the workflow needs a run id that is the same on a replay (as above), never a
  fresh one: StepPersistence's writes are keyed by it.
- The messages carry tool call ids and booleans only, never message content.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from dbos import DBOS

from threadline._public import publish
from threadline.agent import DeferredToolRequests, DeferredToolResults
from threadline.exceptions import UserError

__all__ = ['APPROVAL_TOPIC', 'send_approval', 'wait_for_approval']

APPROVAL_TOPIC = 'threadline.approval'
"""The DBOS message topic approvals travel on (compatibility data, like the step names)."""


async def wait_for_approval(
    requests: DeferredToolRequests, *, timeout: timedelta = timedelta(days=7)
) -> DeferredToolResults:
    """Wait, durably, for the answer to `requests`' approvals (see the module docstring)."""
    workflow_id = DBOS.workflow_id
    if workflow_id is None:
        raise UserError('wait_for_approval: only a DBOS workflow can wait durably; call it inside one')
    if requests.calls:
        raise UserError('wait_for_approval: these requests include calls waiting for an external result, not approval')
    answer = await DBOS.recv_async(APPROVAL_TOPIC, timeout_seconds=timeout.total_seconds())
    if answer is None:
        raise TimeoutError(f'workflow {workflow_id!r}: no approval arrived within {timeout}')
    waiting = {call.tool_call_id for call in requests.approvals}
    answered = _approvals(answer, where=f'the approval for workflow {workflow_id!r}')
    if missing := sorted(waiting - set(answered)):
        raise UserError(f'the approval for workflow {workflow_id!r} leaves tool calls unanswered: {missing}')
    if extra := sorted(set(answered) - waiting):
        raise UserError(f'the approval for workflow {workflow_id!r} names tool calls not waiting: {extra}')
    return requests.build_results(approvals=dict(answered))


async def send_approval(workflow_id: str, approvals: Mapping[str, bool]) -> None:
    """Answer the approvals a workflow waits for in `wait_for_approval`: each tool call id maps
    to `True` (approve) or `False` (deny). The answer is stored durably before this returns."""
    if not isinstance(workflow_id, str) or not workflow_id:
        raise UserError(f'send_approval: workflow_id must be a non-empty string, not {workflow_id!r}')
    answer = _approvals(approvals, where='send_approval(approvals=...)')
    await DBOS.send_async(workflow_id, answer, APPROVAL_TOPIC)


def _approvals(value: object, *, where: str) -> dict[str, bool]:
    if not isinstance(value, Mapping) or not value:
        raise UserError(f'{where} must map tool call ids to True or False, not {type(value).__name__}')
    bad = sorted(str(k) for k, v in value.items() if not isinstance(k, str) or not isinstance(v, bool))
    if bad:
        raise UserError(f'{where}: each tool call id must map to True or False; these do not: {bad}')
    return {str(k): bool(v) for k, v in value.items()}


publish('threadline.durable', globals(), __all__)
