"""Capabilities: hooks around runs, model requests and tool calls (see `AbstractCapability`)."""

from __future__ import annotations

from ._base import AbstractCapability, ModelRequestContext
from ._hooks import Hooks

__all__ = ['AbstractCapability', 'Hooks', 'ModelRequestContext']
