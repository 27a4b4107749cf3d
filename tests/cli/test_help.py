"""Every command's `--help` as a person reads it at 80 columns: no line wider than the screen, no
command summary cut mid-sentence, and every option says what it does."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

import threadline.cli  # noqa: F401 - registers every command on the group
from threadline.cli._app import cli


def commands(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from commands(sub, (*path, name))


EVERY = list(commands(cli))


@pytest.mark.parametrize(('path', 'command'), EVERY, ids=[' '.join(p) or 'threadline' for p, _ in EVERY])
def test_help_fits_80_columns_and_says_everything_whole(path: tuple[str, ...], command: click.Command) -> None:
    shown = CliRunner().invoke(cli, [*path, '--help'], terminal_width=80)
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    listed = [line for line in lines if line.startswith('  ') and not line.lstrip().startswith('-')]
    assert [line for line in listed if line.rstrip().endswith('...')] == []  # a summary cut short
    quiet = [p.opts for p in command.params if isinstance(p, click.Option) and not p.help and not p.hidden]
    assert quiet == []
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            summary = sub.get_short_help_str(limit=80 - 6 - max(map(len, command.commands)))
            assert not summary.endswith('...'), f'{name}: {summary}'
