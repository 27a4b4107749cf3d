"""`python -m threadline` runs the `threadline` command."""

from .cli import run

run()
