"""A pydantic-ai `Agent` served by Threadline's server (`threadline serve --agent module:attr`).

The server runs a turn by calling `run_stream_events(prompt, message_history=...,
conversation_id=..., deferred_tool_results=...)` and reading Threadline's events; `ServedAgent`
gives a pydantic-ai agent that face. The stored history goes to pydantic-ai through the bridge
(remembered as converted, so the run does not convert it back), and pydantic-ai's events come
back as Threadline's.

Rules (each tested in `tests/pydantic_ai/test_served.py`):
- The events the server's streams read cross: a part's start, deltas and end, a tool's result,
  and the run's result, which becomes a Threadline `AgentRunResult` (its messages converted, its
  own usage, a `DeferredToolRequests` output as Threadline's, so approvals are announced and
  resumed as for Threadline's own agent). Other pydantic-ai events are not forwarded.
- Approvals and denials from the server cross as pydantic-ai's `DeferredToolResults`.
- Whatever capabilities the pydantic-ai agent has run as they would; the server saves the result
  itself, so do not give the served agent a `StepPersistence` on the same store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from typing import Any

from pydantic_ai import Agent as TheirAgent
from pydantic_ai import AgentRunResultEvent as TheirResultEvent
from pydantic_ai import DeferredToolRequests as TheirRequests
from pydantic_ai import DeferredToolResults as TheirResults
from pydantic_ai import ToolApproved as TheirApproved
from pydantic_ai import ToolDenied as TheirDenied
from pydantic_ai import messages as pa
from pydantic_ai.run import AgentRunResult as TheirResult

from threadline._public import publish
from threadline.agent import AgentRunResult, DeferredToolRequests, DeferredToolResults, ToolDenied
from threadline.messages import (
    AgentRunResultEvent,
    AgentStreamEvent,
    FunctionToolResultEvent,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPartDelta,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    UserContent,
    UserPromptPart,
)
from threadline.pydantic_ai._bridge import from_pydantic_ai, to_pydantic_ai
from threadline.pydantic_ai._history import run_usage_of
from threadline.pydantic_ai._view import CONVERTED

__all__ = ['ServedAgent']

_DELTAS: dict[str, type] = {'text': TextPartDelta, 'thinking': ThinkingPartDelta, 'tool_call': ToolCallPartDelta}


class ServedAgent:
    """A pydantic-ai `agent` with the face Threadline's server runs (module docstring)."""

    def __init__(self, agent: TheirAgent[Any, Any]) -> None:
        self.agent = agent

    def __repr__(self) -> str:
        return f'ServedAgent({self.agent!r})'

    async def run_stream_events(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        *,
        message_history: Sequence[ModelMessage] = (),
        conversation_id: str | None = None,
        deferred_tool_results: DeferredToolResults | None = None,
    ) -> AsyncIterator[AgentStreamEvent | AgentRunResultEvent]:
        history = to_pydantic_ai(message_history)
        CONVERTED.put_all(history, message_history)
        prompt = user_prompt if user_prompt is None or isinstance(user_prompt, str) else _their_prompt(user_prompt)
        events = self.agent.run_stream_events(
            prompt,
            message_history=history,
            conversation_id=conversation_id,
            deferred_tool_results=_their_results(deferred_tool_results),
        )
        async with events as stream:
            async for event in stream:
                converted = _our_event(event)
                if converted is not None:
                    yield converted


def _their_prompt(prompt: Sequence[UserContent]) -> list[pa.UserContent]:
    [request] = to_pydantic_ai([ModelRequest(parts=[UserPromptPart(list(prompt))])])
    assert isinstance(request, pa.ModelRequest)
    part = request.parts[0]
    assert isinstance(part, pa.UserPromptPart) and not isinstance(part.content, str)
    return list(part.content)


def _their_results(results: DeferredToolResults | None) -> TheirResults | None:
    if results is None:
        return None
    approvals: dict[str, bool | TheirApproved | TheirDenied] = {}
    for call_id, decision in results.approvals.items():
        approvals[call_id] = TheirDenied(decision.message) if isinstance(decision, ToolDenied) else bool(decision)
    return TheirResults(calls=dict(results.calls), approvals=approvals)


def _our_response_part(part: pa.ModelResponsePart) -> ModelResponsePart:
    [message] = from_pydantic_ai([pa.ModelResponse(parts=[part])])
    assert isinstance(message, ModelResponse)
    return message.parts[0]


def _our_request_part(part: pa.ModelRequestPart) -> ModelRequestPart:
    [message] = from_pydantic_ai([pa.ModelRequest(parts=[part])])
    assert isinstance(message, ModelRequest)
    return message.parts[0]


def _our_delta(delta: object) -> TextPartDelta | ThinkingPartDelta | ToolCallPartDelta | None:
    cls = _DELTAS.get(str(getattr(delta, 'part_delta_kind', '')))
    if cls is None:
        return None
    names = {f.name for f in dataclasses.fields(cls)}
    made: TextPartDelta | ThinkingPartDelta | ToolCallPartDelta = cls(
        **{name: getattr(delta, name) for name in names if hasattr(delta, name)}
    )
    return made


def _our_event(event: object) -> AgentStreamEvent | AgentRunResultEvent | None:
    if isinstance(event, pa.PartStartEvent):
        part = _our_response_part(event.part)
        return PartStartEvent(event.index, part, previous_part_kind=event.previous_part_kind)
    if isinstance(event, pa.PartDeltaEvent):
        delta = _our_delta(event.delta)
        return None if delta is None else PartDeltaEvent(event.index, delta)
    if isinstance(event, pa.PartEndEvent):
        return PartEndEvent(event.index, _our_response_part(event.part), next_part_kind=event.next_part_kind)
    if isinstance(event, pa.FunctionToolResultEvent):
        added = None if event.content is None else _our_request_part(pa.UserPromptPart(event.content))
        return FunctionToolResultEvent(_our_request_part(event.part), content=getattr(added, 'content', None))
    if isinstance(event, TheirResultEvent):
        return AgentRunResultEvent(_our_result(event.result))
    return None


def _our_result(result: TheirResult[Any]) -> AgentRunResult[Any]:
    theirs = result.all_messages()
    ours = CONVERTED.convert(list(theirs))
    usage = run_usage_of(result)
    return AgentRunResult(
        _our_output(result.output),
        ours,
        len(theirs) - len(result.new_messages()),
        run_id=result.run_id,
        conversation_id=result.conversation_id,
        usage=usage,
        run_usage=usage,
    )


def _our_output(output: object) -> object:
    if not isinstance(output, TheirRequests):
        return output
    return DeferredToolRequests(
        calls=[_our_call(c) for c in output.calls],
        approvals=[_our_call(c) for c in output.approvals],
        metadata=dict(output.metadata),
    )


def _our_call(call: pa.ToolCallPart) -> ToolCallPart:
    part = _our_response_part(call)
    assert isinstance(part, ToolCallPart)
    return part


publish('threadline.pydantic_ai', globals(), __all__)  # loaded on first use, through the package
