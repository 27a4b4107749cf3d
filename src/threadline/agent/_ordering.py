"""Capability ordering: where a capability sits in the chain whatever order it was listed in.

A capability declares constraints with `get_ordering()` (a `CapabilityOrdering`); the chain sorts
the run's capabilities (the agent's and the run's together, `CombinedCapability` members as
siblings) before any hook is called. Rules, as pydantic-ai 2.62 applies them:
- `position='outermost'` puts it before every capability not in that tier, `'innermost'` after
  every capability not in that tier; within a tier the listed order holds;
- `wraps=[X]` puts it before (outside) each capability that `X` matches, `wrapped_by=[X]` after;
  a type matches its instances and its subclasses' (`issubclass`), an instance only itself;
- `requires=[T]` needs an instance of `T` (or a subclass) among the capabilities: a `UserError`
  names both otherwise; it does not order them;
- a capability that holds others orders as the merge of its own and theirs (two different
  positions among them are a `UserError`), where it holds them as pydantic-ai's `apply` visits:
  a `WrapperCapability` around one plain capability is only itself (neither the wrapped one's
  constraints nor its type count), around a combined one also its members;
- constraints that contradict each other (a cycle) are a `UserError`; with no constraints at all
  the listed order is kept, and otherwise it breaks every tie (a stable topological sort).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

from threadline.exceptions import UserError

if TYPE_CHECKING:
    from threadline.agent._capability import AbstractCapability

__all__ = ['CapabilityOrdering', 'CapabilityPosition', 'CapabilityRef', 'sort_capabilities']

CapabilityPosition = Literal['outermost', 'innermost']
"""A fixed tier in the chain: before every other capability, or after every other one."""

Cap: TypeAlias = 'AbstractCapability[Any]'
"""Any capability (the constraints do not depend on the deps type)."""

CapabilityRef: TypeAlias = 'type[Cap] | Cap'
"""A capability type (matches its instances and subclasses') or one capability (matches itself)."""

C = TypeVar('C', bound='Cap')


@dataclass
class CapabilityOrdering:
    """Where a capability must sit in the chain (returned by `AbstractCapability.get_ordering`)."""

    position: CapabilityPosition | None = None
    """A fixed tier, or None to keep the listed order."""
    wraps: Sequence[CapabilityRef] = ()
    """Capabilities this one encloses: it comes before them."""
    wrapped_by: Sequence[CapabilityRef] = ()
    """Capabilities that enclose this one: it comes after them."""
    requires: Sequence[type[Cap]] = ()
    """Capability types that must be present (no order implied)."""


def sort_capabilities(capabilities: Sequence[C]) -> list[C]:
    """`capabilities` in an order that meets every constraint (see the module rules)."""
    caps = list(capabilities)
    leaves = [_leaves(cap) for cap in caps]
    orderings = [_merged(cap, group) for cap, group in zip(caps, leaves, strict=True)]
    if all(o is None for o in orderings):
        return caps
    present = {type(leaf) for group in leaves for leaf in group}
    for cap, ordering in zip(caps, orderings, strict=True):
        for needed in ordering.requires if ordering else ():
            if not any(issubclass(t, needed) for t in present):
                raise UserError(
                    f'`{type(cap).__name__}` requires `{needed.__name__}` but it was not found among the capabilities.'
                )
    sorter: TopologicalSorter[int] = TopologicalSorter()
    for i in range(len(caps)):
        sorter.add(i)
    for i, ordering in enumerate(orderings):
        if ordering is not None:
            _add_edges(sorter, i, ordering, orderings, leaves)
    try:
        order = list(sorter.static_order())
    except CycleError:
        raise UserError('Circular ordering constraints among capabilities') from None
    return [caps[i] for i in order]


def _add_edges(
    sorter: TopologicalSorter[int],
    i: int,
    ordering: CapabilityOrdering,
    orderings: list[CapabilityOrdering | None],
    leaves: list[list[Cap]],
) -> None:
    """Edges for capability `i` (`sorter.add(later, earlier)`: `earlier` comes first)."""
    tier = ordering.position
    for j, other in enumerate(orderings):
        if j == i:
            continue
        other_tier = other.position if other else None
        if tier == 'outermost' and other_tier != 'outermost':
            sorter.add(j, i)
        if tier == 'innermost' and other_tier != 'innermost':
            sorter.add(i, j)
        if any(_matches(ref, leaves[j]) for ref in ordering.wraps):
            sorter.add(j, i)
        if any(_matches(ref, leaves[j]) for ref in ordering.wrapped_by):
            sorter.add(i, j)


def _matches(ref: CapabilityRef, leaves: list[Cap]) -> bool:
    if isinstance(ref, type):
        return any(isinstance(leaf, ref) for leaf in leaves)
    return any(leaf is ref for leaf in leaves)


def _leaves(capability: Cap) -> list[Cap]:
    """`capability` and the capabilities it holds, as pydantic-ai's `apply` visits them: a combined
    capability is its members; a wrapper is itself, plus what it wraps only when that holds
    several (a wrapper around one plain capability is just the wrapper)."""
    members = getattr(capability, 'combined', None)
    if members is not None:
        return [leaf for member in members for leaf in _leaves(member)]
    found = [capability]
    inner = getattr(capability, 'wrapped', None)
    if inner is not None:
        below = _leaves(inner)
        if len(below) != 1 or below[0] is not inner:
            found.extend(below)
    return found


def _merged(capability: Cap, leaves: list[Cap]) -> CapabilityOrdering | None:
    """One ordering for a capability and what it wraps: their constraints together."""
    given = [o for o in (leaf.get_ordering() for leaf in leaves) if o is not None]
    if not given:
        return None
    positions = {o.position for o in given if o.position is not None}
    if len(positions) > 1:
        raise UserError(
            f'`{type(capability).__name__}` and the capabilities it wraps ask for conflicting positions '
            f'{sorted(positions)}: give each tier its own capability'
        )
    return CapabilityOrdering(
        position=positions.pop() if positions else None,
        wraps=[ref for o in given for ref in o.wraps],
        wrapped_by=[ref for o in given for ref in o.wrapped_by],
        requires=[t for o in given for t in o.requires],
    )
