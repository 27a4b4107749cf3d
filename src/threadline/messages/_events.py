"""Events a streamed run emits: parts starting, growing and ending, tool calls and results, the
final result, delivered enqueued messages, and the run's result."""

# No `from __future__ import annotations`: the classes are shown as `threadline.messages`'s, so
# pydantic (a user's `TypeAdapter` of an event) could not resolve string annotations here.
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal

# At run time, not only for type checkers: pydantic resolves these names when a user builds a
# `TypeAdapter` of an event.
from threadline.messages._content import UserContent
from threadline.messages._deltas import TextPartDelta, ThinkingPartDelta, ToolCallPartDelta
from threadline.messages._messages import ModelMessage, ModelRequestPart, ModelResponsePart
from threadline.messages._parts import ToolCallPart

__all__ = [
    'AgentRunResultEvent',
    'AgentStreamEvent',
    'EnqueuedMessagesEvent',
    'FinalResultEvent',
    'FunctionToolCallEvent',
    'FunctionToolResultEvent',
    'PartDeltaEvent',
    'PartEndEvent',
    'PartStartEvent',
    'TextPartDelta',
    'ThinkingPartDelta',
    'ToolCallPartDelta',
]


@dataclass(frozen=True)
class PartStartEvent:
    """A new part started at `index` of the response being streamed; `previous_part_kind` is the
    kind of the part before it, if any (for a UI that groups parts of one kind)."""

    index: int
    part: ModelResponsePart
    _: KW_ONLY
    previous_part_kind: str | None = None
    event_kind: Literal['part_start'] = 'part_start'


@dataclass(frozen=True)
class PartDeltaEvent:
    """The part at `index` grew by `delta`."""

    index: int
    delta: TextPartDelta | ThinkingPartDelta | ToolCallPartDelta
    event_kind: Literal['part_delta'] = 'part_delta'


@dataclass(frozen=True)
class PartEndEvent:
    """The part at `index` is complete (a text, thinking or tool call part: those that grow by
    deltas); `next_part_kind` is the kind of the part after it, None for the last."""

    index: int
    part: ModelResponsePart
    _: KW_ONLY
    next_part_kind: str | None = None
    event_kind: Literal['part_end'] = 'part_end'


@dataclass(frozen=True)
class FinalResultEvent:
    """The response being streamed is the run's final result (through `tool_name`, or text)."""

    tool_name: str | None
    tool_call_id: str | None
    event_kind: Literal['final_result'] = 'final_result'


@dataclass(frozen=True)
class FunctionToolCallEvent:
    """A function tool call was checked and is about to run; `args_valid` says whether its
    arguments passed validation (None: the call was answered unchecked, e.g. by a deferred result)."""

    part: ToolCallPart
    _: KW_ONLY
    args_valid: bool | None = None
    event_kind: Literal['function_tool_call'] = 'function_tool_call'

    @property
    def tool_call_id(self) -> str:
        return self.part.tool_call_id


@dataclass(frozen=True)
class FunctionToolResultEvent:
    """A tool call produced its result part (`part`, as pydantic-ai 2.62 names it); `content` is
    what a `ToolReturn(content=...)` adds to the request after the results."""

    part: ModelRequestPart
    _: KW_ONLY
    content: str | Sequence[UserContent] | None = None
    event_kind: Literal['function_tool_result'] = 'function_tool_result'

    @property
    def result(self) -> ModelRequestPart:
        """The result part under its earlier name (pydantic-ai before 2.x called it `result`)."""
        return self.part

    @property
    def tool_call_id(self) -> str:
        return str(getattr(self.part, 'tool_call_id', ''))


@dataclass(frozen=True)
class EnqueuedMessagesEvent:
    """Content enqueued with `enqueue_id` was delivered into the history.

    `messages` are the delivered messages as they landed. Content spliced into an existing request
    (tool-tied content) arrives as a request holding the delivered parts, and `parts` are those
    parts as they sit in the history.
    """

    enqueue_id: str
    messages: tuple[ModelMessage, ...]
    parts: tuple[ModelRequestPart, ...] = ()
    event_kind: Literal['enqueued_messages'] = 'enqueued_messages'


@dataclass(frozen=True)
class AgentRunResultEvent:
    """The run finished; `result` is its `AgentRunResult` (typed `Any` here: messages sit below the agent layer)."""

    result: Any
    event_kind: Literal['agent_run_result'] = 'agent_run_result'


AgentStreamEvent = (
    PartStartEvent
    | PartDeltaEvent
    | PartEndEvent
    | FinalResultEvent
    | FunctionToolCallEvent
    | FunctionToolResultEvent
    | EnqueuedMessagesEvent
)
