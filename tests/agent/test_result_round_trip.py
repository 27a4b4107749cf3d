"""A run result keeps what pydantic-ai's keeps through a JSON round trip: the output tool's name,
and `timestamp` is the answer's time."""

from __future__ import annotations

from pydantic import BaseModel, TypeAdapter

from threadline import Agent
from threadline.agent import AgentRunResult
from threadline.models.test import TestModel


class Answer(BaseModel):
    x: int


def test_the_output_tool_name_and_timestamp_survive_a_json_round_trip() -> None:
    result = Agent(TestModel(), output_type=Answer).run_sync('give x')
    assert result.output_tool_name == 'final_result'
    assert result.timestamp == result.response.timestamp
    adapter = TypeAdapter(AgentRunResult[Answer])
    again = adapter.validate_json(adapter.dump_json(result))
    assert again.output_tool_name == 'final_result' and again.output == result.output
    assert again.timestamp == result.timestamp
    text = Agent(TestModel()).run_sync('hi')
    assert text.output_tool_name is None


def test_the_wire_form_matches_pydantic_ai() -> None:
    from pydantic_ai import Agent as TheirAgent
    from pydantic_ai.models.test import TestModel as TheirTestModel
    from pydantic_ai.run import AgentRunResult as TheirResult

    theirs = TheirAgent(TheirTestModel(), output_type=Answer).run_sync('give x')
    ours = Agent(TestModel(), output_type=Answer).run_sync('give x')
    their_wire = TypeAdapter(TheirResult[Answer]).dump_python(theirs, mode='json')
    our_wire = TypeAdapter(AgentRunResult[Answer]).dump_python(ours, mode='json')
    assert our_wire['output_tool_name'] == their_wire['output_tool_name'] == 'final_result'
    assert set(our_wire) == set(their_wire)
