"""Capabilities: hooks around runs, model requests and tool calls (see `AbstractCapability`)."""

from __future__ import annotations

from ._base import AbstractCapability, ModelRequestContext
from ._hooks import Hooks
from ._instrumentation import Instrumentation, MessageHistoryMutatedWarning
from ._process_history import ProcessHistory
from ._reinject import ReinjectSystemPrompt

__all__ = [
    'AbstractCapability',
    'Hooks',
    'Instrumentation',
    'MessageHistoryMutatedWarning',
    'ModelRequestContext',
    'ProcessHistory',
    'ReinjectSystemPrompt',
]
