"""One durable turn with StepPersistence, killed (SIGKILL) at a chosen point (for test_kills.py).

    python -m tests.durable._trial_child DIRECTORY sqlite|postgres TRIAL run KILL_AT
    python -m tests.durable._trial_child DIRECTORY sqlite|postgres TRIAL recover|clean|resume

The turn: a model request, a tool call, a second request, a second tool call, an answer. Every
point where the process may die is a tick: inside a model request, inside a tool body before and
after its effect, between steps, and just before and just after a store write commits. `run`
dies at tick KILL_AT; `clean` counts the ticks of a run that is never killed. `recover` and
`clean` print the stored conversation, the ledger and how often each effect was applied (`resume`
only finishes what the worker left pending, as a restarted worker would); the model
requests answered go to DIRECTORY/requests-TRIAL.log with the pid and trial of the process that answered, where and
which process died to DIRECTORY/killed-TRIAL.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

from dbos import DBOS, SetWorkflowID

from threadline import Agent, ModelMessage, ModelMessagesTypeAdapter, ModelResponse, RunContext, TextPart, ToolCallPart
from threadline.agent.capability import AbstractCapability
from threadline.audit import AuditContext, PromptContract, audit_history
from threadline.durable import DBOSDurability, dbos_config, durable_history
from threadline.models.function import AgentInfo, FunctionModel
from threadline.storage import AsyncStore, PostgresStore, SQLiteStore, StepPersistence, SyncStore, annotate_tool_effect

DIRECTORY, BACKEND, TRIAL, MODE = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
KILL_AT = int(sys.argv[5]) if MODE == 'run' else 0
ticks: dict[str, int] = {}
store: AsyncStore[SyncStore] = (
    PostgresStore(os.environ['THREADLINE_TEST_POSTGRES_URL'])
    if BACKEND == 'postgres'
    else SQLiteStore(DIRECTORY / 'store.db')
)
effects = sqlite3.connect(DIRECTORY / 'effects.db', isolation_level=None, check_same_thread=False)
effects.execute('CREATE TABLE IF NOT EXISTS applied (key TEXT PRIMARY KEY, times INTEGER NOT NULL)')


def trial(run_id: str | None) -> str:
    """The trial a run belongs to, from its run id (`turn-<trial>`, the workflow's id). Everything
    a workflow does depends on its own inputs only: a worker may run another worker's workflow
    (DBOS recovery across executors), so nothing here may assume the process's own trial."""
    return run_id.removeprefix('turn-') if run_id else TRIAL


def tick(where: str, name: str) -> None:
    """A point where the process may die: it dies at the KILL_AT-th point of its own trial's run."""
    ticks[name] = ticks.get(name, 0) + 1
    if name == TRIAL and ticks[name] == KILL_AT:
        (DIRECTORY / f'killed-{TRIAL}').write_text(f'{where}\n{os.getpid()}')
        os.kill(os.getpid(), signal.SIGKILL)


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    name = trial(next((m.run_id for m in reversed(messages) if m.run_id), None))
    tick('inside a model request', name)
    calls = sum(1 for m in messages if isinstance(m, ModelResponse))
    with (DIRECTORY / f'requests-{name}.log').open('a') as log:
        log.write(f'{len(messages)} {os.getpid()} {TRIAL}\n')  # answered, by whom (a request killed above never is)
    if calls < 2:
        order = f'order-{calls + 1}'
        return ModelResponse(parts=[ToolCallPart('apply', {'order': order}, tool_call_id=f'call-{calls + 1}')])
    return ModelResponse(parts=[TextPart('both orders applied')])


class Between(AbstractCapability[Any]):
    async def after_node_run(self, ctx: RunContext[Any], *, node: Any, result: Any) -> Any:
        tick('between steps', trial(ctx.run_id))
        return result


agent = Agent(FunctionModel(model), capabilities=[StepPersistence(store, scope='trials'), DBOSDurability(), Between()])


@agent.tool
def apply(ctx: RunContext[None], order: str) -> str:
    name = trial(ctx.run_id)
    key = ctx.crash_retry.idempotency_key if ctx.crash_retry else f'{name}-{order}'
    if ctx.crash_retry is None:
        annotate_tool_effect(ctx, idempotency_key=key)
    tick('inside a tool, before its effect', name)
    if effects.execute('SELECT 1 FROM applied WHERE key = ?', (key,)).fetchone() is None:  # looked up first
        effects.execute('INSERT INTO applied VALUES (?, 1) ON CONFLICT (key) DO UPDATE SET times = times + 1', (key,))
    tick('inside a tool, after its effect', name)
    return f'{order} applied'


_write = store.sync.step_write


def step_write(write: Any) -> int:
    tick('just before a store write', trial(write.run_id))
    revision = _write(write)
    tick('just after a store write commits', trial(write.run_id))
    return revision


store.sync.step_write = step_write  # type: ignore[method-assign]


@DBOS.workflow(name='trial_turn')
async def trial_turn(prompt: str, conversation_id: str) -> str:
    history = await durable_history(store, conversation_id, scope='trials')
    result = await agent.run(prompt, message_history=history, conversation_id=conversation_id, run_id=DBOS.workflow_id)
    return str(result.output)


async def main() -> None:
    # each trial is its own worker: a worker restarting recovers its own workflows, not another's
    DBOS(config=dbos_config(store, name='threadline_trials', log_level='ERROR', executor_id=f'worker-{TRIAL}'))
    DBOS.launch()
    if MODE == 'resume':  # a worker started again only to finish what it left pending
        await _finish_own()
        return
    conversation = f'conversation-{TRIAL}'
    if MODE in ('run', 'clean'):
        with SetWorkflowID(f'turn-{TRIAL}'):
            handle = await DBOS.start_workflow_async(trial_turn, 'apply both orders', conversation)
        output = await handle.get_result()
    else:
        output = await (await DBOS.retrieve_workflow_async(f'turn-{TRIAL}')).get_result()
    stored = await store.load(conversation, scope='trials')
    ledger = await store.tool_effects(f'turn-{TRIAL}', scope='trials')
    for effect in ledger:  # what the effects table confirms, as a receipt: then the audit can say READY
        store.sync.record_outcome(
            conversation,
            scope='trials',
            run_id=f'turn-{TRIAL}',
            expected_effect=f'apply {effect.tool_call_id}',
            destination='effects',
            idempotency_key=effect.idempotency_key,
            evidence_ref=f'effects:{effect.idempotency_key}',
            strength='outcome',
        )
    audit = audit_history(
        store.sync.load(conversation, scope='trials'),
        AuditContext(
            source='store',
            store=store,
            scope='trials',
            conversation_id=conversation,
            prompt_contract=PromptContract.dynamic('trials'),  # the agent has no system prompt
        ),
    )
    report = {
        'output': output,
        'ticks': ticks.get(TRIAL, 0),
        'messages': json.loads(ModelMessagesTypeAdapter.dump_json(stored.messages)),
        'ledger': [(e.tool_call_id, e.status) for e in ledger],
        'verdict': audit.verdict,
        # A call retried after a kill that came before the tool annotated its key uses the
        # ledger's default key (`turn-<trial>/<call id>`): count its effect too.
        'applied': effects.execute(
            'SELECT key, times FROM applied WHERE key LIKE ? OR key LIKE ? ORDER BY key',
            (f'{TRIAL}-%', f'turn-{TRIAL}/%'),
        ).fetchall(),
        'verified': (await store.verify(conversation, scope='trials')).ok,
    }
    print(json.dumps(report))
    # A worker may have taken another's workflow (recovery across executors): shut down as a
    # deployment should, no longer dequeuing and letting what runs finish (DBOS waits, up to the
    # timeout); a worker that left one half-run would leave it to its executor id's next start.
    DBOS.destroy(workflow_completion_timeout_sec=60)
    store.close()


async def _finish_own() -> None:
    """Wait until nothing is pending under this worker's executor id (DBOS re-queued it at launch,
    and some worker runs it), then shut down as `main` does."""
    while await DBOS.list_workflows_async(
        status=['PENDING', 'ENQUEUED'], executor_id=DBOS.executor_id, load_input=False, load_output=False
    ):
        await asyncio.sleep(0.2)
    DBOS.destroy(workflow_completion_timeout_sec=60)
    store.close()


if __name__ == '__main__':
    asyncio.run(main())
