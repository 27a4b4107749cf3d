"""`python -m threadline` runs the `threadline` command."""

from threadline.cli import run

run()
