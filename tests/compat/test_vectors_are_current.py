"""The checked-in vectors are exactly what the reference (dev-group pydantic-ai) computes from their inputs."""

from __future__ import annotations

from tests.data.regenerate_vectors import KEPT_AS_WRITTEN, regenerate


def test_every_vector_is_what_the_reference_computes() -> None:
    vectors = regenerate()
    assert {p.parent.name for p in vectors} == {'wire', 'repair', 'sanitize'}
    stale = sorted(p.name for p, (stored, fresh) in vectors.items() if stored != fresh)
    assert stale == [], 'run: uv run python -m tests.data.regenerate_vectors'
    assert {p.name for p in vectors} >= KEPT_AS_WRITTEN
