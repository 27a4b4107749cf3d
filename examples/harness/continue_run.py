"""The harness's `continue_run` example over a Threadline store: a first turn, then, in a new
process as far as the store can tell (a new `HarnessStepStore` on the same file), the run is found
by its conversation and continued from its latest settled snapshot.

    uv run --extra harness python examples/harness/continue_run.py [DATABASE]

Afterwards Threadline's own readers see the same conversation: `load_history` hands it to any
pydantic-ai agent, and Threadline's `Agent` can continue it too.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel
from pydantic_ai_harness.step_persistence import StepPersistence, continue_run

from threadline.pydantic_ai import HarnessStepStore, load_history
from threadline.storage import SQLiteStore


def librarian(store: HarnessStepStore) -> Agent[None, str]:
    agent = Agent(TestModel(), capabilities=[StepPersistence(store=store, agent_name='librarian')])

    @agent.tool_plain
    def read_file(path: str) -> str:
        """The first lines of a file."""
        return f'{path}: def _apply_provider_details_delta(...): ...'

    return agent


async def first_turn(database: Path) -> None:
    threadline_store = SQLiteStore(database)
    await librarian(HarnessStepStore(threadline_store, scope='docs')).run(
        'Find ThinkingPartDelta and confirm the callable allowance', conversation_id='libr-conv'
    )
    threadline_store.close()


async def later(database: Path) -> None:
    threadline_store = SQLiteStore(database)
    store = HarnessStepStore(threadline_store, scope='docs')
    prior_run = (await store.list_runs(conversation_id='libr-conv'))[-1].run_id
    history = await continue_run(store, run_id=prior_run)
    result = await librarian(store).run(
        'Read _apply_provider_details_delta and check the path', message_history=history, conversation_id='libr-conv'
    )
    runs = await store.list_runs(conversation_id='libr-conv')
    print(f'{len(runs)} runs in libr-conv: {", ".join(r.run_id for r in runs)}')
    stored = load_history(threadline_store, 'libr-conv', scope='docs')
    assert stored.messages == result.all_messages()
    print(f'the conversation holds {len(stored.messages)} messages; load_history gives the same as the run')
    branches = threadline_store.sync.branches('libr-conv', scope='docs')
    print(f'branches: {len(branches)} (the continued run extended the log, nothing was copied)')
    threadline_store.close()


if __name__ == '__main__':
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(scratch) / 'harness.db'
        asyncio.run(first_turn(path))
        asyncio.run(later(path))
