"""`chat` and `prompt` print the answer as it streams, with a spinner on a terminal's stderr while
nothing comes; a pipe gets the answer alone."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from rich.console import Console

from tests.cli.test_cli import _read_until, spawn
from threadline import Agent
from threadline.cli._stream import StreamPrinter
from threadline.messages import ModelMessage, ToolReturnPart
from threadline.models.function import AgentInfo, DeltaToolCall, FunctionModel


def test_text_is_printed_before_the_model_has_finished() -> None:
    out = io.StringIO()
    printer = StreamPrinter(Console(file=io.StringIO()), prefix='assistant> ', out=out)
    seen_early: list[str] = []

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        yield 'Hel'
        for _ in range(200):  # the rest comes only once the first piece is on the screen
            if 'Hel' in out.getvalue():
                seen_early.append(out.getvalue())
                break
            await asyncio.sleep(0.01)
        yield 'lo.'

    Agent(FunctionModel(stream_function=stream)).run_sync('hi', event_stream_handler=printer)
    assert printer.done() is True
    assert seen_early == ['assistant> Hel'] and out.getvalue() == 'assistant> Hello.\n'


def test_each_later_response_starts_after_a_blank_line() -> None:
    out = io.StringIO()
    printer = StreamPrinter(Console(file=io.StringIO()), out=out)

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        if any(isinstance(p, ToolReturnPart) for m in messages for p in getattr(m, 'parts', [])):
            yield 'It is sunny.'
            return
        yield 'Checking the weather.'
        yield {0: DeltaToolCall('weather', '{}', 'c1')}

    agent = Agent(FunctionModel(stream_function=stream))

    @agent.tool_plain
    def weather() -> str:
        return 'sunny'

    agent.run_sync('Weather?', event_stream_handler=printer)
    printer.done()
    assert out.getvalue() == 'Checking the weather.\n\nIt is sunny.\n'


def test_a_terminal_shows_a_spinner_and_a_pipe_gets_the_answer_alone(tmp_path: Path) -> None:
    db = str(tmp_path / 's.db')
    process, leader = spawn(['prompt', '--db', db, 'Where is order 42?'], THREADLINE_HOME=str(tmp_path), TERM='xterm')
    try:
        seen = _read_until(leader, b'(conversation', timeout=60)
        assert process.wait(timeout=20) == 0
    finally:
        process.kill()
        os.close(leader)
    assert 'thinking…'.encode() in seen and b'order 42 shipped' in seen
    # the spinner's line was erased before the answer was written over it
    assert seen.index('thinking…'.encode()) < seen.index(b'\x1b[2K') < seen.index(b'order 42 shipped')

    piped = subprocess.run(
        [sys.executable, '-m', 'threadline', 'prompt', '--db', db, '-c', 'Where is order 42?'],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, 'THREADLINE_HOME': str(tmp_path)},
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == 'lookup order: order 42 shipped on 2025-01-03, arriving Friday.\n'
    assert 'thinking' not in piped.stderr and '\x1b' not in piped.stderr
