"""Shared fixtures: the reference vectors and the test histories, all under `tests/data/`."""

from __future__ import annotations

import json
from typing import Any

from tests import _hypothesis  # noqa: F401  (loads the selected profile)
from tests.data import VECTORS

__all__ = ['VECTORS', 'load_vector', 'vector_names']


def load_vector(kind: str, name: str) -> Any:
    return json.loads((VECTORS / kind / name).read_bytes())


def vector_names(kind: str) -> list[str]:
    names = sorted(p.name for p in (VECTORS / kind).glob('*.json'))
    assert names, f'no {kind} vectors under {VECTORS}'  # an empty parametrization would skip silently
    return names
