"""A real DBOS Transact on a SQLite system database, launched once per test module that asks."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from dbos import DBOS


@pytest.fixture(scope='module')
def dbos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """DBOS launched for the module (workflows register when their module is imported)."""
    database = tmp_path_factory.mktemp('dbos') / 'system.sqlite'
    DBOS(config={'name': 'threadline_tests', 'system_database_url': f'sqlite:///{database}', 'log_level': 'WARNING'})
    DBOS.launch()
    yield
    DBOS.destroy()
