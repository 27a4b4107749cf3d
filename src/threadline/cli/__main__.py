"""`python -m threadline.cli` runs the `threadline` command."""

from . import run

run()
