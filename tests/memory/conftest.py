"""The store fixtures of the storage tests: every backend, PostgreSQL when its URL is set."""

from tests.storage.conftest import any_store

__all__ = ['any_store']
