"""Shared fixtures: the reference vectors and the test histories, all under `tests/data/`."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from tests import _hypothesis  # noqa: F401  (loads the selected profile)
from tests.data import VECTORS

__all__ = ['VECTORS', 'load_vector', 'vector_names']

# The store key and tip book of this test session live in a directory of its own, never in the
# developer's ~/.config/threadline (subprocesses started by tests inherit it).
os.environ['THREADLINE_HOME'] = tempfile.mkdtemp(prefix='threadline-home-')
for _name in ('THREADLINE_STORE_KEYS', 'THREADLINE_STORE_KEYS_FILE', 'THREADLINE_REQUIRE_STORE_KEY'):
    os.environ.pop(_name, None)


def load_vector(kind: str, name: str) -> Any:
    return json.loads((VECTORS / kind / name).read_bytes())


def vector_names(kind: str) -> list[str]:
    names = sorted(p.name for p in (VECTORS / kind).glob('*.json'))
    assert names, f'no {kind} vectors under {VECTORS}'  # an empty parametrization would skip silently
    return names
