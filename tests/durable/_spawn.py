"""Running a durable test's child process, and reading the JSON report it prints last."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def child(module: str, *args: object, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m tests.durable.<module> args...` from the repository root, waited for."""
    return subprocess.run(
        [sys.executable, '-m', f'tests.durable.{module}', *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The last line a child printed, as JSON; the child must have exited cleanly."""
    assert done.returncode == 0, done.stderr[-3000:]
    printed: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return printed
