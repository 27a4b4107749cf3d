"""The message bridge is exact: pydantic-ai → Threadline → pydantic-ai gives back equal objects,
Threadline → pydantic-ai → Threadline too, and both sides write the same wire JSON, for histories
built from every part kind, including those only pydantic-ai models."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai import ModelMessagesTypeAdapter as TheirTA
from pydantic_ai import messages as pa
from pydantic_ai._deferred_capabilities import LoadCapabilityCallPart, LoadCapabilityReturnPart
from pydantic_ai._tool_search import (
    NativeToolSearchCallPart,
    NativeToolSearchReturnPart,
    ToolSearchCallPart,
    ToolSearchReturnPart,
)
from pydantic_ai.models.test import TestModel

from tests._hypothesis import examples
from tests.compat._reference_strategies import ids, request_parts, response_parts, stamps, texts, usage
from threadline import ModelMessagesTypeAdapter as OurTA
from threadline.messages import OpaquePart
from threadline.pydantic_ai import from_pydantic_ai, to_pydantic_ai

# The kinds only pydantic-ai models (Threadline keeps them opaque) and its tool-kind subclasses.
only_theirs_requests = st.one_of(
    st.builds(pa.SpeechPart, speaker=st.just('user'), transcript=st.none() | texts),
    st.builds(ToolSearchReturnPart, content=st.builds(lambda m: {'discovered_tools': [], 'message': m}, texts)),
    st.builds(LoadCapabilityReturnPart, content=st.builds(lambda m: {'message': m}, texts), timestamp=stamps),
    st.builds(pa.InstructionDeltaPart, id=st.none(), content=st.none() | texts),
    st.builds(
        pa.InstructionBaselinePart,
        instructions=st.lists(st.builds(pa.InstructionPart, texts), max_size=2),
    ),
    st.builds(pa.ToolAvailabilityDeltaPart, tools_added=st.lists(ids, max_size=2), tool_call_id=st.none() | ids),
    st.builds(pa.UserPromptPart, st.lists(st.builds(pa.StructuredContent, st.dictionaries(texts, texts)), min_size=1)),
    st.builds(
        pa.UserPromptPart,
        st.lists(st.builds(pa.BinaryImage, st.binary(max_size=8), media_type=st.just('image/png')), min_size=1),
    ),
)
only_theirs_responses = st.one_of(
    st.builds(ToolSearchCallPart, args=st.none() | st.builds(lambda q: {'queries': q}, st.lists(texts, max_size=2))),
    st.builds(LoadCapabilityCallPart, args=st.none() | st.builds(lambda i: {'id': i}, ids)),
    st.builds(NativeToolSearchCallPart, provider_name=st.just('anthropic')),
    st.builds(
        NativeToolSearchReturnPart,
        content=st.builds(lambda m: {'discovered_tools': [], 'message': m}, texts),
        provider_name=st.just('anthropic'),
    ),
    st.builds(pa.SpeechPart, speaker=st.just('assistant'), transcript=texts),
)
requests = st.builds(
    pa.ModelRequest,
    st.lists(request_parts | only_theirs_requests, max_size=4),
    timestamp=st.none() | stamps,
    instructions=st.none() | texts,
    run_id=st.none() | ids,
)
attempts = st.builds(
    pa.ModelRequestAttempt,
    model_name=texts,
    outcome=st.sampled_from(['error', 'rejected']),
    timestamp=stamps,
    duration=st.integers(0, 10**6).map(lambda ms: timedelta(milliseconds=ms)),
)
responses = st.builds(
    pa.ModelResponse,
    st.lists(response_parts | only_theirs_responses, max_size=4),
    usage=usage,
    timestamp=stamps,
    provider_name=st.none() | texts,
    workspace_ref=st.none() | st.builds(pa.WorkspaceRef, provider=texts, id=ids),
    failed_attempts=st.none() | st.lists(attempts, max_size=2),
)
all_kinds = st.lists(requests | responses, max_size=6)


def wire(data: bytes) -> Any:
    return json.loads(data)


@settings(
    max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(all_kinds)
def test_the_bridge_is_exact_both_ways(history: list[Any]) -> None:
    ours = from_pydantic_ai(history)
    assert to_pydantic_ai(ours) == history  # pydantic-ai's own equality
    assert wire(OurTA.dump_json(ours)) == wire(TheirTA.dump_json(history))
    again = from_pydantic_ai(to_pydantic_ai(ours))
    assert again == ours


def test_a_real_runs_history_crosses_and_parts_only_pydantic_ai_has_stay_opaque() -> None:
    agent = Agent(TestModel(), system_prompt='be brief')

    @agent.tool_plain
    def weather(city: str) -> str:
        return f'sunny in {city}'

    result = agent.run_sync('weather?')
    history = [*result.all_messages(), pa.ModelRequest(parts=[pa.SpeechPart(speaker='user', transcript='hi')])]
    ours = from_pydantic_ai(history)
    assert isinstance(ours[-1].parts[0], OpaquePart) and ours[-1].parts[0].part_kind == 'speech'
    assert to_pydantic_ai(ours) == history
    # Values that are not message objects are the very same objects on the other side.
    call = result.all_messages()[1].parts[0]
    assert isinstance(call, pa.ToolCallPart)
    assert ours[1].parts[0].args is call.args or ours[1].parts[0].args == call.args


def test_run_usage_crosses_field_by_field_and_both_sides_have_the_same_fields() -> None:
    import dataclasses

    from pydantic_ai.usage import RunUsage as TheirUsage

    from threadline.messages import RunUsage as OurUsage
    from threadline.pydantic_ai import usage_from_pydantic_ai, usage_to_pydantic_ai
    from threadline.pydantic_ai._bridge import USAGE_FIELDS

    assert {f.name for f in dataclasses.fields(TheirUsage)} == set(USAGE_FIELDS)
    assert {f.name for f in dataclasses.fields(OurUsage)} == set(USAGE_FIELDS)
    theirs = TheirUsage(input_tokens=7, output_tokens=3, requests=2, tool_calls=1, details={'reasoning': 4})
    ours = usage_from_pydantic_ai(theirs)
    assert (ours.input_tokens, ours.output_tokens, ours.requests, ours.tool_calls) == (7, 3, 2, 1)
    assert usage_to_pydantic_ai(ours) == theirs
    ours.details['reasoning'] = 5
    assert theirs.details == {'reasoning': 4}  # not shared
