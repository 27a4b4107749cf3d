"""Test data that belongs to the project: reference vectors and history generators."""

from pathlib import Path

VECTORS = Path(__file__).resolve().parent / 'vectors'
