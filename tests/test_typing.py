"""A user's script that uses the stores type-checks with precise types under `mypy --strict`."""

from __future__ import annotations

from pathlib import Path

from mypy import api

SCRIPT = Path(__file__).parent / 'typing' / 'user_script.py'


def test_store_calls_are_precisely_typed_in_a_user_script() -> None:
    out, err, status = api.run(['--strict', '--no-incremental', '--warn-unused-ignores', str(SCRIPT)])
    assert status == 0, out + err
