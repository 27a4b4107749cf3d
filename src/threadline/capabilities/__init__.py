"""Capabilities: hooks around runs, model requests and tool calls (see `AbstractCapability`)."""

from __future__ import annotations

from ..agent._capability import AbstractCapability, CapabilityChain, ModelRequestContext
from ._hooks import Hooks
from ._instrumentation import Instrumentation, MessageHistoryMutatedWarning
from ._process_history import ProcessHistory
from ._reinject import ReinjectSystemPrompt

__all__ = [
    'AbstractCapability',
    'CapabilityChain',
    'Hooks',
    'Instrumentation',
    'MessageHistoryMutatedWarning',
    'ModelRequestContext',
    'ProcessHistory',
    'ReinjectSystemPrompt',
]

from .._public import publish  # noqa: E402 - runs once every name above exists

publish(__name__, globals(), __all__)
