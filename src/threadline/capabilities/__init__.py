"""Capabilities: hooks around runs, model requests and tool calls (see `AbstractCapability`)."""

from __future__ import annotations

from threadline._public import publish
from threadline.agent.capability import (
    AbstractCapability,
    CapabilityChain,
    CapabilityFunc,
    CapabilityOrdering,
    CapabilityPosition,
    CapabilityRef,
    DynamicCapability,
    ModelRequestContext,
    on_event,
)
from threadline.capabilities._bundle import Capability
from threadline.capabilities._compact_when_full import CompactWhenFull
from threadline.capabilities._compaction import ClearOldToolResults, KeepLastTurns, SummarizeOlderTurns
from threadline.capabilities._hooks import CombinedCapability, HandleDeferredToolCalls, Hooks, HookTimeoutError
from threadline.capabilities._instrumentation import Instrumentation, MessageHistoryMutatedWarning
from threadline.capabilities._prepare import PrepareOutputTools, PrepareTools, Toolset
from threadline.capabilities._process_history import ProcessHistory
from threadline.capabilities._reinject import ReinjectSystemPrompt
from threadline.capabilities._wrapper import WrapperCapability

__all__ = [
    'AbstractCapability',
    'Capability',
    'CapabilityChain',
    'CapabilityOrdering',
    'CapabilityPosition',
    'CapabilityRef',
    'ClearOldToolResults',
    'CapabilityFunc',
    'CombinedCapability',
    'CompactWhenFull',
    'DynamicCapability',
    'HandleDeferredToolCalls',
    'HookTimeoutError',
    'Hooks',
    'Instrumentation',
    'KeepLastTurns',
    'MessageHistoryMutatedWarning',
    'ModelRequestContext',
    'PrepareOutputTools',
    'PrepareTools',
    'ProcessHistory',
    'ReinjectSystemPrompt',
    'SummarizeOlderTurns',
    'Toolset',
    'WrapperCapability',
    'on_event',
]


publish(__name__, globals(), __all__)  # after every name above exists
