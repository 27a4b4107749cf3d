"""`threadline chat` at a terminal (a pseudo-terminal): leaving with Ctrl-C, and line history."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.cli.test_cli import _read_until, spawn


def test_ctrl_c_leaves_and_says_where_the_conversation_was_saved(tmp_path: Path) -> None:
    db = str(tmp_path / 'c.db')
    process, leader = spawn(['chat', '--db', db, '--scope', 'me', '--cid', 'kept'], THREADLINE_HOME=str(tmp_path))
    try:
        _read_until(leader, b'you> ')
        os.write(leader, b'Where is order 42?\n')
        assert b'assistant> ' in _read_until(leader, b'you> ')
        time.sleep(0.5)  # the prompt is written just before input() starts to wait: let it
        process.send_signal(signal.SIGINT)  # what Ctrl-C at the prompt sends
        said = _read_until(leader, b'saved as kept', timeout=60)
        assert process.wait(timeout=20) == 0
    finally:
        process.kill()
        os.close(leader)
    assert b'saved as kept' in said and b'Aborted' not in said and b'Traceback' not in said


def test_up_recalls_the_last_message_not_the_approval_answer(tmp_path: Path) -> None:
    db = str(tmp_path / 'h.db')
    process, leader = spawn(['chat', '--db', db, '--scope', 'me'], THREADLINE_HOME=str(tmp_path), TERM='xterm')
    try:
        _read_until(leader, b'you> ')
        os.write(leader, b'Please refund order 42.\n')
        _read_until(leader, b'[y/N]')
        os.write(leader, b'n\n')
        _read_until(leader, b'you> ')
        os.write(leader, b'\x1b[A\n')  # Up, Enter: the previous line again
        again = _read_until(leader, b'[y/N]')
        os.write(leader, b'n\n')
        _read_until(leader, b'you> ')
        os.write(leader, b'quit\n')
        assert process.wait(timeout=20) == 0
    finally:
        process.kill()
        os.close(leader)
    assert b'allow issue_refund(' in again  # the refund was asked for again, not a message "n"
