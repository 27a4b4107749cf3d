"""Hypothesis profiles, chosen with HYPOTHESIS_PROFILE=quick|ci|thorough (default `quick`).

Each property test names the example count it needs for a thorough run; `examples(n)` scales it
to the selected profile, so a developer's `uv run pytest` stays fast, `.ci/run` (profile `ci`)
explores more, and `thorough` runs every test at its full count. The names are distinct from the
`slow` pytest marker, which selects long crash trials, not example counts.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ['PROFILE', 'examples']

_SHARE = {'quick': 0.1, 'ci': 0.25, 'thorough': 1.0}
PROFILE = os.environ.get('HYPOTHESIS_PROFILE', 'quick')
if PROFILE not in _SHARE:
    raise RuntimeError(f'HYPOTHESIS_PROFILE={PROFILE!r}: use one of {", ".join(_SHARE)}')

for _name, _share in _SHARE.items():
    settings.register_profile(
        _name, max_examples=max(20, int(100 * _share)), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
settings.load_profile(PROFILE)


def examples(thorough: int) -> int:
    """The example count for a test that needs `thorough` examples in a thorough run."""
    return max(20, int(thorough * _SHARE[PROFILE]))
