"""The `threadline` command.

Only a placeholder `demo` exists until the CLI issue lands; it says so and exits 0.
"""

from __future__ import annotations

import sys

__all__ = ['main']

_PLACEHOLDER = (
    'threadline demo: the narrated demo (runs, storage, crash recovery, replay audit) arrives with the '
    'CLI issue. Today Threadline ships its message model and wire-compatible JSON; see README.md.'
)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `threadline` console script."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ('-h', '--help'):
        print('usage: threadline demo')
        return 0
    if args[0] == 'demo':
        print(_PLACEHOLDER)
        return 0
    print(f'threadline: unknown command {args[0]!r}; try `threadline --help`', file=sys.stderr)
    return 2


if __name__ == '__main__':  # pragma: no cover
    sys.exit(main())
