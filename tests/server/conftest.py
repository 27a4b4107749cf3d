"""Lets a fixture see whether its test failed (for the browser test's screenshot)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Iterator[Any]:
    report = yield
    setattr(item, f'rep_{report.when}', report)
    return report
