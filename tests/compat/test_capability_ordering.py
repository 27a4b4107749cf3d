"""Capability ordering (`get_ordering` / `CapabilityOrdering`) as pydantic-ai 2.62 sorts a run's
capabilities, one script body on both libraries. The order is read off the order the capabilities'
`before_model_request` hooks are called in (outermost first)."""

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library_with

LIBS = ('ref', 'ours')


def _names(name: str) -> SimpleNamespace:
    return library_with(name, capabilities=('CapabilityOrdering', 'WrapperCapability'), exceptions=('UserError',))


def family(lib: SimpleNamespace, log: list[str]) -> SimpleNamespace:
    """Capability classes that log their name when asked before each request; `ordering` set on an
    instance is what its `get_ordering` answers."""

    class Logged(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        def __init__(self, label: str, ordering: Any = None) -> None:
            self.label, self.ordering = label, ordering

        def get_ordering(self) -> Any:
            return self.ordering

        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            log.append(self.label)
            return request_context

    class A(Logged):
        pass

    class B(Logged):
        pass

    class C(Logged):
        pass

    class SubA(A):
        pass

    return SimpleNamespace(Logged=Logged, A=A, B=B, C=C, SubA=SubA)


def _case(lib: SimpleNamespace, k: SimpleNamespace, case: str) -> tuple[list[Any], list[Any]]:
    """(the agent's capabilities, the run's) for `case`."""
    order = lib.CapabilityOrdering
    if case == 'positions':
        return [k.A('A'), k.C('C', order(position='innermost')), k.B('B', order(position='outermost'))], []
    if case == 'wraps an instance':
        a = k.A('A')
        return [a, k.B('D', order(wraps=[a]))], []
    if case == 'wrapped_by a type':
        return [k.B('E', order(wrapped_by=[k.A])), k.A('A')], []
    if case == 'wraps a type matches subclasses':
        return [k.SubA('S'), k.B('B', order(wraps=[k.A]))], []
    if case == 'an instance ref is not its class':
        return [k.SubA('S'), k.B('B', order(wraps=[k.A('other')]))], []
    if case == 'agent and run sorted together':
        return [k.A('A')], [k.B('B', order(position='outermost'))]
    if case == 'requires present':
        return [k.C('C'), k.B('F', order(requires=[k.C], wraps=[k.C]))], []
    if case == 'requires missing':
        return [k.A('A'), k.B('F', order(requires=[k.C]))], []
    if case == 'a cycle':
        return [k.A('A', order(wraps=[k.B])), k.B('B', order(wraps=[k.A]))], []
    if case == 'combined members are siblings':
        members = lib.CombinedCapability([k.B('X', order(position='outermost')), k.C('Y', order(position='innermost'))])
        return [k.A('A'), members], []
    if case == 'a wrapper is sorted by what it wraps':
        return [k.A('A'), lib.WrapperCapability(k.B('W', order(position='outermost')))], []
    if case == 'two outermost keep their order':
        return [k.A('A', order(position='outermost')), k.C('C'), k.B('B', order(position='outermost'))], []
    return [k.C('C'), k.A('A'), k.B('B')], []


async def sorted_labels(name: str, case: str) -> Any:
    lib = _names(name)
    log: list[str] = []
    kinds = family(lib, log)
    agent_caps, run_caps = _case(lib, kinds, case)

    def model(messages: list[Any], info: Any) -> Any:
        return lib.ModelResponse(parts=[lib.TextPart('ok')])

    try:
        agent = lib.Agent(lib.FunctionModel(model), capabilities=agent_caps)
        await agent.run('go', capabilities=run_caps or None)
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return [type(error).__name__, str(error)]
    return log


CASES = [
    'no constraints',
    'positions',
    'wraps an instance',
    'wrapped_by a type',
    'wraps a type matches subclasses',
    'an instance ref is not its class',
    'agent and run sorted together',
    'requires present',
    'requires missing',
    'a cycle',
    'combined members are siblings',
    'a wrapper is sorted by what it wraps',
    'two outermost keep their order',
]


@pytest.mark.parametrize('case', CASES)
def test_capabilities_are_sorted_as_in_the_reference(case: str) -> None:
    ref, ours = (asyncio.run(sorted_labels(name, case)) for name in LIBS)
    assert ours == ref
    if case == 'positions':
        assert ours == ['B', 'A', 'C']
    if case == 'requires missing':
        assert ours[0] == 'UserError' and '`B` requires `C`' in ours[1]
