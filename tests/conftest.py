"""Shared fixtures: where the reference vectors and the shared benchmark workload live."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(os.environ.get('THREADLINE_SHARED', Path(__file__).resolve().parents[2] / 'shared'))
VECTORS = SHARED / 'vectors'


def load_vector(kind: str, name: str) -> Any:
    return json.loads((VECTORS / kind / name).read_bytes())


def vector_names(kind: str) -> list[str]:
    return sorted(p.name for p in (VECTORS / kind).glob('*.json'))


@pytest.fixture(scope='session')
def workload() -> Any:
    sys.path.insert(0, str(SHARED / 'bench'))
    try:
        import workload as module
    finally:
        sys.path.pop(0)
    return module
