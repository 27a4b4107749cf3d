"""Store fixtures: PostgreSQL tests read THREADLINE_TEST_POSTGRES_URL and skip, saying so, without it."""

from __future__ import annotations

import os

import pytest

POSTGRES_URL = os.environ.get('THREADLINE_TEST_POSTGRES_URL')
needs_postgres = pytest.mark.skipif(
    not POSTGRES_URL, reason='THREADLINE_TEST_POSTGRES_URL is not set (CI sets it; export it to run PostgreSQL tests)'
)


def fresh_postgres_url() -> str:
    """A clean schema for one test: the tables of earlier tests are dropped first."""
    import psycopg

    assert POSTGRES_URL
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute('DROP SCHEMA IF EXISTS public CASCADE')
        conn.execute('CREATE SCHEMA public')
    return POSTGRES_URL
