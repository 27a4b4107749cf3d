"""The user's CLI files beside the store key (`$THREADLINE_HOME`): settings and stored API keys.

Rules: a file is replaced atomically (a new file renamed over the old) and created readable by
the user only (0600), since one of them holds API keys; a missing file is empty; an unreadable
one is an error naming it, never silently replaced.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

__all__ = ['read_private', 'user_file', 'write_private']


def user_file(name: str) -> Path:
    from threadline.trust.sealing import threadline_home

    return threadline_home() / name


def read_private(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise click.ClickException(f'cannot read {path}: {exc}') from None
    if not isinstance(data, dict):
        raise click.ClickException(f'{path} is not a JSON object')
    return data


def write_private(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + '.tmp')
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as file:
        json.dump(data, file, indent=2)
    os.chmod(temporary, 0o600)  # O_CREAT's mode does not apply to a leftover temporary file
    os.replace(temporary, path)
    return path
