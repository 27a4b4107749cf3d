"""`ToolFailed` (a failed result, no retry) and `HandleDeferredToolCalls` (waiting calls answered
inside the run), compared with pydantic-ai 2.62 on the same scripted runs."""

from __future__ import annotations

from typing import Any

import pydantic_ai
import pytest
from pydantic_ai import capabilities as ref_capabilities
from pydantic_ai import exceptions as ref_exceptions
from pydantic_ai import messages as ref_messages
from pydantic_ai.models.function import FunctionModel as RefFunctionModel

import threadline
from threadline import capabilities as our_capabilities
from threadline import exceptions as our_exceptions
from threadline import messages as our_messages
from threadline.models.function import FunctionModel

LIBS = {
    'threadline': (threadline, our_messages, our_capabilities, our_exceptions, FunctionModel),
    'reference': (pydantic_ai, ref_messages, ref_capabilities, ref_exceptions, RefFunctionModel),
}


def records(result: Any) -> list[Any]:
    return [
        [(p.part_kind, getattr(p, 'content', None), getattr(p, 'outcome', None)) for p in m.parts]
        for m in result.all_messages()[1:]
    ]


def failing_run(lib: str) -> Any:
    mod, msgs, _, exceptions, model_cls = LIBS[lib]

    def model(messages: list[Any], info: Any) -> Any:
        if len(messages) < 5:  # three calls in a row: more than the retry budget allows
            return msgs.ModelResponse(parts=[msgs.ToolCallPart('lookup', {'k': 'x'}, f'c{len(messages)}')])
        return msgs.ModelResponse(parts=[msgs.TextPart('done')])

    agent = mod.Agent(model_cls(model))

    @agent.tool_plain
    def lookup(k: str) -> str:
        raise exceptions.ToolFailed(f'no record {k}')

    return agent.run_sync('go')


def test_tool_failed_is_a_failed_result_that_spends_no_retries() -> None:
    ours = failing_run('threadline')
    assert records(ours) == records(failing_run('reference'))
    assert [r[0][2] for r in records(ours)[1::2]] == ['failed', 'failed']


def approval_run(lib: str, handler: Any) -> Any:
    mod, msgs, caps, _, model_cls = LIBS[lib]

    def model(messages: list[Any], info: Any) -> Any:
        if len(messages) == 1:
            return msgs.ModelResponse(parts=[msgs.ToolCallPart('refund', {'order': 'A1'}, 'r1')])
        return msgs.ModelResponse(parts=[msgs.TextPart('refunded')])

    agent = mod.Agent(
        model_cls(model),
        output_type=[str, mod.DeferredToolRequests],
        capabilities=[caps.HandleDeferredToolCalls(handler)],
    )

    @agent.tool_plain(requires_approval=True)
    def refund(order: str) -> str:
        return f'refunded {order}'

    return agent.run_sync('refund A1')


def test_handled_approvals_continue_the_run_as_in_pydantic_ai() -> None:
    def approve(ctx: Any, requests: Any) -> Any:
        return requests.build_results(approve_all=True)

    ours = approval_run('threadline', approve)
    assert ours.output == 'refunded'
    assert records(ours) == records(approval_run('reference', approve))


def test_a_handler_that_declines_leaves_the_calls_to_the_caller() -> None:
    ours = approval_run('threadline', lambda ctx, requests: None)
    assert isinstance(ours.output, threadline.DeferredToolRequests)
    assert [c.tool_call_id for c in ours.output.approvals] == ['r1']
    with pytest.raises(ValueError, match=r"not waiting for approval: \['nope'\]"):
        ours.output.build_results(approvals={'nope': True})
