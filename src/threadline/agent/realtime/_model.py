"""The realtime model interface, its events, and the scripted `TestRealtimeModel`."""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

from threadline.exceptions import UserError
from threadline.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    RequestUsage,
    TextPart,
    ToolCallPart,
)
from threadline.models import Model, ModelProfile, ModelRequestParameters, ModelSettings, ToolDefinition

__all__ = [
    'RealtimeConnection',
    'RealtimeModel',
    'RealtimeTextDelta',
    'RealtimeToolCall',
    'RealtimeTurnComplete',
    'TestRealtimeModel',
]


@dataclass(frozen=True)
class RealtimeTextDelta:
    """Text the model is saying, as it arrives."""

    delta: str


@dataclass(frozen=True)
class RealtimeToolCall:
    """The model called a tool; the session runs it and sends the result back."""

    part: ToolCallPart


@dataclass(frozen=True)
class RealtimeTurnComplete:
    """The model finished a response; `response` is what the history records for it."""

    response: ModelResponse


RealtimeModelEvent = RealtimeTextDelta | RealtimeToolCall | RealtimeTurnComplete


class RealtimeConnection:
    """A live connection: turns go in with `send_turn`, the model's events come out of `events`."""

    @abstractmethod
    async def send_turn(self, parts: Sequence[ModelRequestPart], *, respond: bool = True) -> None:
        """Send a user turn or tool results (with `respond`, the model answers it)."""

    @abstractmethod
    def events(self) -> AsyncIterator[RealtimeModelEvent]:
        """The model's events, in order, for as long as the connection is open."""


class RealtimeModel(Model):
    """A model reached through a live connection (speech-to-speech and the like) rather than one
    request per turn. A session drives it; `request` is not how it is used."""

    @abstractmethod
    def connect(
        self, *, instructions: str | None, tools: list[ToolDefinition], history: list[ModelMessage]
    ) -> AbstractAsyncContextManager[RealtimeConnection]:
        """Open a connection primed with the instructions, tools and earlier history."""

    async def request(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        raise UserError(
            f'{self.model_name!r} is a realtime model: open a session with `agent.realtime(model).session()`'
        )


Reply = ModelResponse | Callable[[list[ModelMessage]], ModelResponse]


class TestRealtimeModel(RealtimeModel):
    """A scripted realtime model for tests: each turn it is sent is answered by the next reply of
    `script` (a `ModelResponse`, or a function of the history so far), streamed as text deltas
    (one per word) and tool calls, then completed with the reply's usage."""

    __test__ = False  # not a pytest test class

    def __init__(self, script: Sequence[Reply], *, context_window: int | None = None) -> None:
        self.script = list(script)
        self.turns: list[list[ModelRequestPart]] = []
        """Every turn sent to the model, in order (what a test asserts on)."""
        self._profile = ModelProfile(context_window=context_window)

    @property
    def model_name(self) -> str:
        return 'test-realtime'

    @property
    def system(self) -> str:
        return 'test'

    @property
    def profile(self) -> ModelProfile:
        return self._profile

    @asynccontextmanager
    async def connect(
        self, *, instructions: str | None, tools: list[ToolDefinition], history: list[ModelMessage]
    ) -> AsyncIterator[RealtimeConnection]:
        yield _ScriptedConnection(self, list(history))


class _ScriptedConnection(RealtimeConnection):
    def __init__(self, model: TestRealtimeModel, history: list[ModelMessage]) -> None:
        self.model = model
        self.history = history
        self.outbox: asyncio.Queue[RealtimeModelEvent] = asyncio.Queue()

    async def send_turn(self, parts: Sequence[ModelRequestPart], *, respond: bool = True) -> None:

        self.model.turns.append(list(parts))
        self.history.append(ModelRequest(parts=list(parts)))
        if not respond:
            return
        if not self.model.script:
            raise UserError('TestRealtimeModel ran out of scripted replies')
        reply = self.model.script.pop(0)
        response = reply(list(self.history)) if callable(reply) else reply
        self.history.append(response)
        for part in response.parts:
            if isinstance(part, TextPart):
                for word in part.content.split(' '):
                    self.outbox.put_nowait(RealtimeTextDelta(word + ' '))
            elif isinstance(part, ToolCallPart):
                self.outbox.put_nowait(RealtimeToolCall(part))
        if not response.usage.has_values():
            response.usage = RequestUsage(input_tokens=10 * len(self.history), output_tokens=len(response.parts))
        self.outbox.put_nowait(RealtimeTurnComplete(response))

    async def events(self) -> AsyncIterator[RealtimeModelEvent]:
        while True:
            yield await self.outbox.get()
