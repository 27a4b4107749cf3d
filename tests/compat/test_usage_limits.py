"""`UsageLimits.check_before_request` as in pydantic-ai 2.62: before each request a run refuses when
the usage it carries (a conversation continued with `usage=`) is already at the request limit or
over a token or cost ceiling, so no request is paid for; the same usage in both libraries gives the
same verdict and the same number of model calls."""

from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library

LIBS = ('ref', 'ours')

# (limits, usage so far): each a case a continued conversation meets.
CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({'request_limit': 1}, {'requests': 1}),
    ({'request_limit': 2}, {'requests': 1}),
    ({'input_tokens_limit': 10}, {'input_tokens': 10}),
    ({'input_tokens_limit': 10}, {'input_tokens': 11}),
    ({'total_tokens_limit': 10}, {'input_tokens': 6, 'output_tokens': 5}),
    ({'total_tokens_limit': 11}, {'input_tokens': 6, 'output_tokens': 5}),
    ({'output_tokens_limit': 1}, {'output_tokens': 5}),
    ({'cost_limit': Decimal('0.5')}, {}),
]


def _names(lib_name: str) -> SimpleNamespace:
    lib = library(lib_name)
    if lib_name == 'ref':
        from pydantic_ai import UsageLimits
        from pydantic_ai.usage import RunUsage
    else:
        from threadline import UsageLimits
        from threadline.usage import RunUsage
    lib.UsageLimits, lib.RunUsage = UsageLimits, RunUsage
    return lib


def _verdict(lib: SimpleNamespace, limits: dict[str, Any], usage: dict[str, Any]) -> str:
    try:
        lib.UsageLimits(**limits).check_before_request(lib.RunUsage(**usage))
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return type(error).__name__
    return 'ok'


def _run(lib: SimpleNamespace, limits: dict[str, Any], usage: dict[str, Any]) -> tuple[str, int]:
    calls: list[int] = []

    def answer(messages: Any, info: Any) -> Any:
        calls.append(1)
        return lib.ModelResponse(parts=[lib.TextPart('hi')])

    agent = lib.Agent(lib.FunctionModel(answer))
    try:
        agent.run_sync('x', usage_limits=lib.UsageLimits(**limits), usage=lib.RunUsage(**usage))
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return type(error).__name__, len(calls)
    return 'ok', len(calls)


@pytest.mark.parametrize(('limits', 'usage'), CASES)
def test_check_before_request_gives_the_reference_verdict(limits: dict[str, Any], usage: dict[str, Any]) -> None:
    ref, ours = (_verdict(_names(name), limits, usage) for name in LIBS)
    assert ours == ref


@pytest.mark.parametrize(('limits', 'usage'), [c for c in CASES if 'cost_limit' not in c[0]])
def test_a_continued_run_over_a_limit_makes_no_request(limits: dict[str, Any], usage: dict[str, Any]) -> None:
    ref, ours = (_run(_names(name), limits, usage) for name in LIBS)
    assert ours == ref


def test_the_message_names_the_limit_and_the_value() -> None:
    lib = _names('ours')
    with pytest.raises(Exception, match=r'input_tokens_limit of 10 \(input_tokens=11\)'):
        lib.UsageLimits(input_tokens_limit=10).check_before_request(lib.RunUsage(input_tokens=11))
