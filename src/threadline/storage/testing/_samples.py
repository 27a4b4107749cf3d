"""Sample data for the conformance suite: a deterministic turn, and a run result without a model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from threadline.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RequestUsage,
    RunUsage,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

__all__ = ['T0', 'SampleResult', 'turn']

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def turn(i: int, *, conversation_id: str = 'c', run_id: str | None = None, text: str = 'hello') -> list[ModelMessage]:
    """Four messages: a prompt, a tool call, its result, an answer (deterministic in `i`)."""
    run = run_id or f'run-{i}'
    stamp = T0 + timedelta(seconds=i)
    return [
        ModelRequest(
            parts=[UserPromptPart(f'{text} question {i}', timestamp=stamp)],
            timestamp=stamp,
            run_id=run,
            conversation_id=conversation_id,
        ),
        ModelResponse(
            parts=[ToolCallPart('lookup', {'n': i}, f'call-{i}')],
            timestamp=stamp,
            run_id=run,
            conversation_id=conversation_id,
            usage=RequestUsage(input_tokens=10, output_tokens=2),
        ),
        ModelRequest(
            parts=[ToolReturnPart('lookup', f'result {i}', f'call-{i}', timestamp=stamp)],
            timestamp=stamp,
            run_id=run,
            conversation_id=conversation_id,
        ),
        ModelResponse(
            parts=[TextPart(f'answer {i} about zebra{i}')], timestamp=stamp, run_id=run, conversation_id=conversation_id
        ),
    ]


class SampleResult:
    """The parts of a run result a store reads (so the suite needs no model)."""

    def __init__(self, messages: list[ModelMessage], run_id: str, conversation_id: str) -> None:
        self._messages = messages
        self.run_id = run_id
        self.conversation_id = conversation_id
        self.output = 'done'
        self.run_usage = RunUsage(requests=2, tool_calls=1, input_tokens=20, output_tokens=4)
        self.model_name = 'test'

    def new_messages(self) -> list[ModelMessage]:
        return self._messages
