"""The `threadline` command: the demo, chat, and the everyday tools of a conversation store.

Every command takes `--db PATH` (default under the user's data directory, or `THREADLINE_DB`;
a `postgresql://` URL uses PostgreSQL) and `--scope NAME` (default `local`, or
`THREADLINE_SCOPE`). Errors print one line saying what and what to do, and exit 1; `--debug`
shows the traceback instead.
"""

from __future__ import annotations

import sys

from threadline.cli import _chat, _commands, _conversations, _fix, _keys, _memory, _models, _prune, _serve  # noqa: F401  (each registers its commands on the group)
from threadline.cli._app import cli, main

__all__ = ['cli', 'main', 'run']


def run() -> None:
    """The console script."""

    sys.exit(main())
