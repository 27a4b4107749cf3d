"""The capability base and the chain that runs it, named for the packages that build capabilities
(`threadline.capabilities`, `threadline.steps`, `threadline.search`, `threadline.memory`,
`threadline.audit`). Users import `AbstractCapability` from `threadline.capabilities`."""

from __future__ import annotations

from threadline.agent._capability import (
    HOOKS,
    AbstractCapability,
    CapabilityDepsT,
    CapabilityInstructions,
    ModelRequestContext,
)
from threadline.agent._chain import CapabilityChain
from threadline.agent._dynamic_capability import CapabilityFunc, DynamicCapability

__all__ = [
    'HOOKS',
    'AbstractCapability',
    'CapabilityChain',
    'CapabilityDepsT',
    'CapabilityFunc',
    'CapabilityInstructions',
    'DynamicCapability',
    'ModelRequestContext',
]
