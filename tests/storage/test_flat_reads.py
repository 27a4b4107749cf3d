"""What a run start reads, and what a write does, must not grow with the conversation.

A StepPersistence run starts by reading the stored tip and the ledger rows still `started`. A
long conversation written step by step holds one batch per step and one ledger row per tool call,
so a read that walks either grows by a few rows with every turn. Measured here as SQLite virtual
machine instructions (a count, not a time): the same read over a conversation 40 times longer
must do about the same work.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from threadline import ModelRequest, ModelResponse, TextPart, UserPromptPart
from threadline.storage import MemoryStore, ToolEffect

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def conversation(turns: int) -> MemoryStore:
    """`turns` turns, each appended on its own (one batch each) with one settled ledger row."""
    store = MemoryStore()
    for t in range(turns):
        store.sync.append(
            'c',
            [ModelRequest(parts=[UserPromptPart(f'q{t}')]), ModelResponse(parts=[TextPart(f'a{t}')])],
            scope='s',
        )
        effect = ToolEffect(f'run-{t}', f'call-{t}', 'look', 'completed', NOW, NOW)
        store.sync.record_tool_effect(effect, conversation_id='c', scope='s')
    return store


def instructions(store: MemoryStore, read: Callable[[Any], object]) -> int:
    """Virtual machine instructions SQLite runs for `read(store.sync)`, counted in steps of 10."""
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0

    connection = store.sync.dialect.connection
    connection.set_progress_handler(tick, 10)
    try:
        read(store.sync)
    finally:
        connection.set_progress_handler(None, 10)
    return count[0] * 10


def short_and_long(operation: Callable[[Any], object]) -> tuple[int, int]:
    """The instructions of `operation` over a conversation of 25 turns and over one of 1,000."""
    short, long = conversation(25), conversation(1000)
    try:
        return instructions(short, operation), instructions(long, operation)
    finally:
        short.close()
        long.close()


READS: dict[str, Callable[[Any], object]] = {
    'load(last=1)': lambda s: s.load('c', scope='s', last=1),
    'load(last=20)': lambda s: s.load('c', scope='s', last=20),
    'ledger rows still started': lambda s: s.tool_effects_for_conversation('c', scope='s', status='started'),
    'run_start': lambda s: s.run_start('c', scope='s'),
}


@pytest.mark.parametrize('name', list(READS))
def test_run_start_reads_do_not_grow_with_the_conversation(name: str) -> None:
    small, large = short_and_long(READS[name])
    # b-tree descents deepen with the table (a log factor); a walk would be 40 times the work
    assert large < small * 1.5 + 200, (name, small, large)


def _step_write(store: Any) -> object:
    from threadline.storage import SnapshotMark, StepEvent, StepWrite

    start = store.run_start('c', scope='s')
    write = StepWrite(
        'c',
        's',
        'run-next',
        start.revision,
        messages=[ModelRequest(parts=[UserPromptPart('next')])],
        events=[StepEvent('run-next', 'run_started', 0, NOW, idempotency_key='e0')],
        snapshot=SnapshotMark('complete', 0, 's0'),
        effects=[ToolEffect('run-next', 'call-next', 'look', 'started', NOW)],
        register=True,
    )
    return store.step_write(write)


WRITES: dict[str, Callable[[Any], object]] = {
    'append one turn': lambda s: s.append(
        'c', [ModelRequest(parts=[UserPromptPart('q')]), ModelResponse(parts=[TextPart('a')])], scope='s'
    ),
    'record a ledger row': lambda s: s.record_tool_effect(
        ToolEffect('run-0', 'call-new', 'look', 'started', NOW), conversation_id='c', scope='s'
    ),
    'step write (after its run-start read)': _step_write,
}


@pytest.mark.parametrize('name', list(WRITES))
def test_writes_do_not_grow_with_the_conversation(name: str) -> None:
    """A write adds to the end of the log and the ledger: it must not walk the batches, messages or
    ledger rows already stored (issue 15 §3), so 40 times the conversation is about the same work."""
    small, large = short_and_long(WRITES[name])
    assert large < small * 1.5 + 200, (name, small, large)
