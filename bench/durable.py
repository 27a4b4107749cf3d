"""What durability costs: one scripted tool-calling turn (two model requests, one tool call) run
inside a DBOS workflow and outside one, for Threadline's `DBOSDurability` and for pydantic-ai's
own `DBOSDurability` on the same script, at 10 and 20,000 messages of history. The system
database is SQLite, as a first deployment has it: `dbos_config` puts it beside the store's file,
committing as the store does (`--synchronous`: FULL, the store's default, survives power loss;
NORMAL survives a crash of the process). Both sides share it. Medians of interleaved runs, GC on.

    uv run python bench/durable.py [--rounds 15] [--synchronous FULL|NORMAL]

The added time per step is (inside - outside) / 3: a turn makes two model requests and one tool
call, each a DBOS step on both sides. The
history reaches both agents in memory, not as a workflow input, so neither side pays for
serialising it and what is timed is the steps. Beside them, the same DBOS runs a workflow with no
step and one with three steps that do nothing, so DBOS's own cost of a workflow and of a step show
what durability costs on this disk before any library. The database growth per turn is what the turn's
steps checkpoint (the bytes of their outputs in DBOS's `operation_outputs`): it must not grow with
the history.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import workload

SIZES = (10, 20_000)


class Side:
    """One library's agent over a history, run inside a workflow or outside one."""

    def __init__(self, name: str, agent: Any, history: list[Any]) -> None:
        self.name, self.agent, self.history = name, agent, history
        self.inside: list[float] = []
        self.outside: list[float] = []
        self.empty: list[float] = []  # a workflow that makes no step: DBOS's cost of a workflow
        self.bare: list[float] = []  # one that makes three steps doing nothing: DBOS's cost of a step

    async def turn(self, workflow: Any, empty: Any, bare: Any) -> None:
        from dbos import DBOS

        start = time.perf_counter()
        await self.agent.run('next question', message_history=self.history)
        self.outside.append(time.perf_counter() - start)
        from dbos import SetWorkflowID

        start = time.perf_counter()
        with SetWorkflowID(f'{self.name}/{len(self.history)}/{len(self.inside)}-{time.monotonic_ns()}'):
            handle = await DBOS.start_workflow_async(workflow, self.name)
        await handle.get_result()
        self.inside.append(time.perf_counter() - start)
        start = time.perf_counter()
        with SetWorkflowID(f'empty-{time.monotonic_ns()}'):
            handle = await DBOS.start_workflow_async(empty, self.name)
        await handle.get_result()
        self.empty.append(time.perf_counter() - start)
        start = time.perf_counter()
        with SetWorkflowID(f'bare-{time.monotonic_ns()}'):
            handle = await DBOS.start_workflow_async(bare, self.name)
        await handle.get_result()
        self.bare.append(time.perf_counter() - start)


def _threadline_agent(wl: Any) -> Any:
    import threadline
    from threadline.durable import DBOSDurability
    from threadline.models.function import FunctionModel

    return _agent(threadline.Agent, FunctionModel, DBOSDurability(), wl, threadline)


def _pydantic_ai_agent(wl: Any) -> Any:
    import pydantic_ai
    from pydantic_ai.durable_exec.dbos import DBOSDurability
    from pydantic_ai.models.function import FunctionModel

    return _agent(pydantic_ai.Agent, FunctionModel, DBOSDurability(), wl, pydantic_ai)


def _agent(agent_class: Any, function_model: Any, durability: Any, wl: Any, library: Any) -> Any:
    turn = library.ModelMessagesTypeAdapter.validate_python(wl.turn(0, conversation_id='c'))

    def model(messages: list[Any], info: Any) -> Any:
        return turn[3] if any(getattr(p, 'part_kind', '') == 'tool-return' for p in messages[-1].parts) else turn[1]

    agent = agent_class(function_model(model), name=f'bench_{library.__name__}', capabilities=[durability])
    tool_name = turn[1].parts[-1].tool_name

    @agent.tool_plain(name=tool_name)
    def _tool(query: str, limit: int) -> str:
        return str(turn[2].parts[0].content)

    return agent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--rounds', type=int, default=15)
    parser.add_argument(
        '--synchronous', choices=['FULL', 'NORMAL'], default='FULL', help="the store's, and so DBOS's file's"
    )
    args = parser.parse_args()
    import pydantic_ai
    from dbos import DBOS

    import threadline
    from threadline.durable import dbos_config
    from threadline.storage import SQLiteStore

    wl = workload()
    directory = Path(tempfile.mkdtemp())
    agents = {'threadline': _threadline_agent(wl), 'pydantic-ai': _pydantic_ai_agent(wl)}
    histories: dict[tuple[str, int], list[Any]] = {}
    for size in SIZES:
        raw = wl.history(size, conversation_id='c')
        histories['threadline', size] = threadline.ModelMessagesTypeAdapter.validate_python(raw)
        histories['pydantic-ai', size] = pydantic_ai.ModelMessagesTypeAdapter.validate_python(raw)
    current: dict[str, list[Any]] = {}

    @DBOS.workflow(name='bench_turn')
    async def bench_turn(name: str) -> str:
        return str((await agents[name].run('next question', message_history=current[name])).output)

    @DBOS.workflow(name='bench_empty')
    async def bench_empty(name: str) -> str:
        return name

    def nothing() -> str:
        return 'x'

    @DBOS.workflow(name='bench_bare')
    async def bench_bare(name: str) -> str:
        for _ in range(3):
            await DBOS.run_step_async({'name': 'bench.nothing'}, nothing)
        return name

    # As a deployment configures it: DBOS's file beside the store's, committing as the store does.
    store = SQLiteStore(directory / 'store.db', synchronous=args.synchronous)
    DBOS(config=dbos_config(store, name='threadline_bench', log_level='WARNING'))
    DBOS.launch()

    async def measure() -> dict[tuple[str, int], Side]:
        sides = {}
        for size in SIZES:
            for name in agents:
                current[name] = histories[name, size]
                sides[name, size] = Side(name, agents[name], histories[name, size])
            for round_ in range(args.rounds + 2):  # two warm-up rounds, interleaved
                for name in agents:
                    current[name] = histories[name, size]
                    await sides[name, size].turn(bench_turn, bench_empty, bench_bare)
                    if round_ < 2:
                        side = sides[name, size]
                        side.inside.clear(), side.outside.clear(), side.empty.clear(), side.bare.clear()
        return sides

    sides = asyncio.run(measure())
    DBOS.destroy()
    growth = _checkpointed_bytes_per_turn(directory / 'store.db-dbos.sqlite')
    print(f'durability per scripted turn (2 model requests + 1 tool call), SQLite system database, {args.synchronous}')
    print(f'{"":12} {"history":>8} {"outside":>10} {"inside":>10} {"added/turn":>11} {"added/step":>11} {"DB/turn":>9}')
    added: dict[tuple[str, int], float] = {}
    for (name, size), side in sides.items():
        outside, inside = statistics.median(side.outside), statistics.median(side.inside)
        added[name, size] = (inside - outside) / 3
        print(
            f'{name:12} {size:>8,} {outside * 1e3:8.2f}ms {inside * 1e3:8.2f}ms '
            f'{(inside - outside) * 1e3:9.2f}ms {added[name, size] * 1e3:9.2f}ms {growth[name, len(side.history)]:>7,.0f} B'
        )
    for size in SIZES:
        ours, theirs = added['threadline', size], added['pydantic-ai', size]
        print(f'at {size:,} messages: Threadline adds {ours * 1e3:.2f} ms a step, pydantic-ai {theirs * 1e3:.2f} ms')
    workflow = statistics.median(t for side in sides.values() for t in side.empty)
    beyond = {key: value - workflow / 3 for key, value in added.items()}
    bare = (statistics.median(t for side in sides.values() for t in side.bare) - workflow) / 3
    print(
        f'a workflow with no step costs {workflow * 1e3:.2f} ms; a step beyond it, at 10 messages: '
        f'Threadline {beyond["threadline", 10] * 1e3:.2f} ms, pydantic-ai {beyond["pydantic-ai", 10] * 1e3:.2f} ms; '
        f'a DBOS step that does nothing: {bare * 1e3:.2f} ms'
    )


def _checkpointed_bytes_per_turn(database: Path) -> dict[tuple[str, int], float]:
    """Per side and history size: the mean bytes a turn's steps checkpointed."""
    import sqlite3

    with sqlite3.connect(database) as conn:
        rows = conn.execute(
            'SELECT workflow_uuid, SUM(LENGTH(output)) FROM operation_outputs GROUP BY workflow_uuid'
        ).fetchall()
    totals: dict[tuple[str, int], list[int]] = {}
    for workflow, size in rows:
        if workflow.count('/') != 2:  # the workflows that measure DBOS alone
            continue
        name, history, _ = workflow.split('/')
        totals.setdefault((name, int(history)), []).append(size or 0)
    return {key: statistics.mean(sizes) for key, sizes in totals.items()}


if __name__ == '__main__':
    main()
