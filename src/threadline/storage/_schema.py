"""Numbered schema migrations, one folder per dialect (`migrations/<dialect>/NNNN_name.sql`).

Each store runs the missing ones on open and records them in `threadline_migrations`. A new
column is one new file per dialect; the files are written out in each dialect's own SQL, never
derived from another dialect's text.
"""

from __future__ import annotations

from importlib import resources
from typing import Literal

__all__ = ['migrations']


def migrations(dialect: Literal['sqlite', 'postgres']) -> list[tuple[int, str]]:
    """(version, script) of every migration of `dialect`, in order."""
    folder = resources.files('threadline.storage.migrations').joinpath(dialect)
    scripts = sorted((entry.name, entry.read_text()) for entry in folder.iterdir() if entry.name.endswith('.sql'))
    return [(int(name.split('_', 1)[0]), script) for name, script in scripts]
