"""History processors that shorten a history and keep it valid: put one in `ProcessHistory`.

    agent = Agent(model, capabilities=[ProcessHistory(KeepLastTurns(10))])

Rules every processor here keeps (property-tested on random histories):
- It cuts only at the start of a turn: a request that holds a user prompt and answers no tool
  call. So a tool call is never separated from its result, and a kept history starts with a turn.
- The standing system prompt (the system prompt parts opening the first request) is kept, moved
  to the front of the first kept request.
- A `load_capability` call, its result and the tool-availability delta after it stay together:
  a turn is kept or dropped whole, and `ClearOldToolResults` leaves load results as they are.
  Dropping a turn unloads what it loaded (the model may load it again); clearing never does.
- The last message (the request about to be sent) keeps its parts, so the run still knows what
  is new; only a standing prompt or summary may be put in front of them when the cut lands there.
- What it returns is already in the form `repair_messages` gives, so repair changes nothing.
- A history it cannot shorten under these rules comes back unchanged (the same list content).
The log keeps what a processor drops: under `StepPersistence` the shortened history is stored as
a new branch, and the earlier turns stay in the conversation's log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from threadline.agent import (
    Agent,
    RunContext,  # at runtime: ProcessHistory reads the annotation
)
from threadline.agent.tools import LOAD_KIND
from threadline.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.messages.wire import encoder

if TYPE_CHECKING:
    from threadline.models import Model

__all__ = ['ClearOldToolResults', 'KeepLastTurns', 'SummarizeOlderTurns', 'turn_starts']


def turn_starts(messages: Sequence[ModelMessage]) -> list[int]:
    """Indexes of the requests that start a turn: a user prompt, no tool call answered, and no
    call made before it still waiting for its result (a cut there would orphan that result).
    A call answered more than once (repair keeps duplicate results) waits for its last answer."""
    answered_at: dict[str, int] = {}
    for index, message in enumerate(messages):
        if isinstance(message, ModelRequest):
            for result in message.parts:
                if isinstance(result, ToolReturnPart | RetryPromptPart) and result.tool_call_id:
                    answered_at[result.tool_call_id] = index
    starts, pending_until = [], -1
    for index, message in enumerate(messages):
        if isinstance(message, ModelResponse):
            for call in message.parts:
                if isinstance(call, ToolCallPart):
                    pending_until = max(pending_until, answered_at.get(call.tool_call_id, -1))
            continue
        parts = message.parts
        answers = any(isinstance(p, ToolReturnPart | RetryPromptPart) and p.tool_call_id for p in parts)
        if not answers and index > pending_until and any(isinstance(p, UserPromptPart) for p in parts):
            starts.append(index)
    return starts


def _standing(messages: Sequence[ModelMessage]) -> list[SystemPromptPart]:
    first = next((m for m in messages if isinstance(m, ModelRequest)), None)
    standing: list[SystemPromptPart] = []
    for part in first.parts if first is not None else ():
        if not isinstance(part, SystemPromptPart) or part.scope == 'request':
            break
        standing.append(part)
    return standing


def _cut_point(messages: Sequence[ModelMessage], keep_turns: int) -> int | None:
    """Where the last `keep_turns` turns start, or None when there is nothing older to drop."""
    starts = turn_starts(messages)
    if keep_turns < 1:
        raise ValueError('keep at least one turn')
    if len(starts) <= keep_turns:
        return None
    cut = starts[-keep_turns]
    return cut if cut > 0 else None


def _rejoin(messages: Sequence[ModelMessage], cut: int, lead: Sequence[ModelRequestPart]) -> list[ModelMessage]:
    """`messages[cut:]` with `lead` (standing prompt, summary) opening its first request."""
    first = messages[cut]
    assert isinstance(first, ModelRequest)
    kept = list(messages[cut:])
    if lead:
        kept[0] = replace(first, parts=[*lead, *first.parts])
    return kept


class KeepLastTurns:
    """Keep the standing system prompt and the last `turns` turns; drop the turns before them."""

    def __init__(self, turns: int) -> None:
        if turns < 1:
            raise ValueError('KeepLastTurns needs turns >= 1')
        self.turns = turns

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        cut = _cut_point(messages, self.turns)
        if cut is None:
            return messages
        return _rejoin(messages, cut, _standing(messages))


class ClearOldToolResults:
    """Replace the content of tool results older than the last `keep_turns` turns with `marker`,
    keeping every call and result in place (so pairs and ids stay as they were)."""

    def __init__(self, keep_turns: int = 2, *, marker: str = '[tool result cleared to save context]') -> None:
        if keep_turns < 1:
            raise ValueError('ClearOldToolResults needs keep_turns >= 1')
        self.keep_turns, self.marker = keep_turns, marker

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        cut = _cut_point(messages, self.keep_turns)
        if cut is None:
            return messages
        out: list[ModelMessage] = []
        for message in messages[:cut]:
            if isinstance(message, ModelRequest) and any(self._clearable(p) for p in message.parts):
                parts: list[ModelRequestPart] = [self._cleared(p) for p in message.parts]
                message = replace(message, parts=parts)
            out.append(message)
        return [*out, *messages[cut:]]

    def _clearable(self, part: ModelRequestPart) -> bool:
        # A load_capability result is the record that its capability is loaded: clearing it would
        # unload the capability, so it stays (it is a one-line message).
        return isinstance(part, ToolReturnPart) and part.content != self.marker and part.tool_kind != LOAD_KIND

    def _cleared(self, part: Any) -> Any:
        return replace(part, content=self.marker) if self._clearable(part) else part


class SummarizeOlderTurns:
    """Replace the turns before the last `keep_turns` with a `CompactionPart` holding a summary
    that `model` writes. The summary opens the first kept request, after the standing prompt; it
    is sent as user-side context (never as a system prompt). Turns already summarized are
    summarized again with the older summary as their first line, so summaries do not pile up.
    """

    def __init__(
        self,
        model: Model | str,
        *,
        keep_turns: int = 4,
        instructions: str = (
            'Summarize the conversation below for the assistant that will continue it. Keep facts, '
            'decisions, names, numbers and open questions; drop pleasantries. Write plain text.'
        ),
    ) -> None:
        if keep_turns < 1:
            raise ValueError('SummarizeOlderTurns needs keep_turns >= 1')
        self.model, self.keep_turns, self.instructions = model, keep_turns, instructions

    async def __call__(self, ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:

        cut = _cut_point(messages, self.keep_turns)
        if cut is None:
            return messages
        transcript = transcript_of(messages[:cut])
        summarizer: Agent[None, str] = Agent(self.model, instructions=self.instructions)
        summary = (await summarizer.run(transcript)).output
        return _rejoin(messages, cut, [*_standing(messages), CompactionPart(content=str(summary))])


def transcript_of(messages: Sequence[ModelMessage]) -> str:
    """The dropped turns as plain text for the summarizer (one line per part that says something)."""
    lines: list[str] = []
    for message in messages:
        for part in message.parts:
            line = _line(part)
            if line:
                lines.append(line)
    return '\n'.join(lines)


def _line(part: ModelRequestPart | ModelResponsePart) -> str | None:
    if isinstance(part, CompactionPart):
        return f'Earlier summary: {part.content or ""}'
    if isinstance(part, UserPromptPart):
        text = (
            part.content if isinstance(part.content, str) else ' '.join(c for c in part.content if isinstance(c, str))
        )
        return f'User: {text}'
    if isinstance(part, TextPart):
        return f'Assistant: {part.content}'
    if isinstance(part, ToolCallPart):
        return f'Assistant called {part.tool_name}: {part.args_as_json_str()}'
    if isinstance(part, ToolReturnPart):
        content = part.content if isinstance(part.content, str) else encoder.encode(part.content).decode()
        return f'Tool {part.tool_name} returned: {content}'
    return None  # thinking, system prompts and bookkeeping say nothing the summary needs
