"""Capabilities: hooks around runs, model requests and tool calls (see `AbstractCapability`)."""

from __future__ import annotations

from .._public import publish
from ..agent._capability import AbstractCapability, ModelRequestContext
from ..agent._chain import CapabilityChain
from ._compact_when_full import CompactWhenFull
from ._compaction import ClearOldToolResults, KeepLastTurns, SummarizeOlderTurns
from ._hooks import CombinedCapability, HandleDeferredToolCalls, Hooks, HookTimeoutError
from ._instrumentation import Instrumentation, MessageHistoryMutatedWarning
from ._process_history import ProcessHistory
from ._reinject import ReinjectSystemPrompt

__all__ = [
    'AbstractCapability',
    'CapabilityChain',
    'ClearOldToolResults',
    'CombinedCapability',
    'CompactWhenFull',
    'HandleDeferredToolCalls',
    'HookTimeoutError',
    'Hooks',
    'Instrumentation',
    'KeepLastTurns',
    'MessageHistoryMutatedWarning',
    'ModelRequestContext',
    'ProcessHistory',
    'ReinjectSystemPrompt',
    'SummarizeOlderTurns',
]


publish(__name__, globals(), __all__)  # after every name above exists
