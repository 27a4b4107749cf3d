"""`threadline prompt` reads what is piped in, as `llm` does: alone (no TEXT, or `-`), or after TEXT
with a blank line between; with neither, a usage error that says how."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def prompt(tmp_path: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, '-m', 'threadline.cli', 'prompt', *args, '-m', 'demo', '--db', str(tmp_path / 'p.db')]
    env = {**os.environ, 'THREADLINE_HOME': str(tmp_path)}
    return subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, timeout=60, check=False)


def test_piped_text_is_the_message(tmp_path: Path) -> None:
    done = prompt(tmp_path, stdin='hello from a pipe\n')
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('You said: "hello from a pipe"')
    dash = prompt(tmp_path, '-', stdin='and from a dash\n')
    assert dash.stdout.startswith('You said: "and from a dash"'), dash.stderr


def test_text_and_piped_text_are_joined(tmp_path: Path) -> None:
    done = prompt(tmp_path, 'summarize', stdin='the piped part')
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('You said: "summarize\n\nthe piped part"')


def test_no_message_at_all_is_a_usage_error(tmp_path: Path) -> None:
    done = prompt(tmp_path, stdin='')
    assert done.returncode == 2
    assert 'pipe it in' in done.stderr and 'Traceback' not in done.stderr
