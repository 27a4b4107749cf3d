"""The harness's quick start, kept as it is but for one line: its `StepPersistence` writes into a
Threadline store through `HarnessStepStore`.

    uv run --extra harness python examples/harness/quick_start.py [DATABASE]

The agent answers from a scripted model (no API key needed); swap in `'openai:gpt-5'` or any
pydantic-ai model. Prints the run's events and where its snapshots point in Threadline's log.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel
from pydantic_ai_harness.step_persistence import StepPersistence

from threadline.pydantic_ai import HarnessStepStore
from threadline.storage import SQLiteStore


async def main(database: Path) -> None:
    threadline_store = SQLiteStore(database)
    store = HarnessStepStore(threadline_store, scope='docs')  # the one line that changes
    librarian = Agent(
        TestModel(), name='librarian', capabilities=[StepPersistence(store=store, agent_name='librarian')]
    )

    @librarian.tool_plain
    def find_symbol(name: str) -> str:
        """Where a symbol is defined."""
        return f'{name} is defined in messages.py'

    result = await librarian.run('Where is ThinkingPartDelta defined?', conversation_id='libr-conv')
    [run] = await store.list_runs(conversation_id='libr-conv')
    print(f'run {run.run_id} of {run.agent_name!r} in conversation {run.conversation_id!r}')
    print('events:', ', '.join(e.kind for e in await store.list_events(run_id=run.run_id)))
    snapshot = await store.latest_snapshot(run_id=run.run_id)
    assert snapshot is not None and snapshot.messages == result.all_messages()
    print(f'latest snapshot: step {snapshot.step_index}, {len(snapshot.messages)} messages ({snapshot.state})')
    for mark in await threadline_store.list_snapshots(run.run_id, scope='docs'):
        pending = f' and {len(mark.pending)} not sent yet' if mark.pending else ''
        print(f'  snapshot: the log up to position {mark.position}{pending} ({mark.state})')
    stored = await threadline_store.load('libr-conv', scope='docs')
    print(f'Threadline log: {len(stored.messages)} messages, each stored once')
    threadline_store.close()


if __name__ == '__main__':
    with tempfile.TemporaryDirectory() as scratch:
        asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(scratch) / 'harness.db'))
