"""`python -m threadline.cli` runs the `threadline` command."""

from threadline.cli import run

run()
