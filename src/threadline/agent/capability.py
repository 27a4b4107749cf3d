"""The capability base and the chain that runs it, named for the packages that build capabilities
(`threadline.capabilities`, `threadline.steps`, `threadline.search`, `threadline.memory`,
`threadline.audit`). Users import `AbstractCapability` from `threadline.capabilities`."""

from __future__ import annotations

from threadline.agent._capability import (
    HOOKS,
    PROVIDERS,
    AbstractCapability,
    CapabilityDepsT,
    CapabilityInstructions,
    ModelRequestContext,
)
from threadline.agent._chain import CapabilityChain
from threadline.agent._dynamic_capability import CapabilityFunc, DynamicCapability
from threadline.agent._model_choice import ModelResolutionContext, ModelSelectionContext, ModelSelector
from threadline.agent._on_event import on_event
from threadline.agent._ordering import CapabilityOrdering, CapabilityPosition, CapabilityRef

__all__ = [
    'HOOKS',
    'PROVIDERS',
    'AbstractCapability',
    'CapabilityChain',
    'CapabilityDepsT',
    'CapabilityFunc',
    'CapabilityInstructions',
    'CapabilityOrdering',
    'CapabilityPosition',
    'CapabilityRef',
    'DynamicCapability',
    'ModelRequestContext',
    'ModelResolutionContext',
    'ModelSelectionContext',
    'ModelSelector',
    'on_event',
]
