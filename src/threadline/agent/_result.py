"""`AgentRunResult`: what a finished run gives back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from ..messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse, RunUsage

__all__ = ['AgentRunResult', 'OutputDataT', 'RunResult']

OutputDataT = TypeVar('OutputDataT')


@dataclass(repr=False)
class AgentRunResult(Generic[OutputDataT]):
    """The output of a run and the history it leaves behind.

    `all_messages()` is the run's history (the input history as cleaned at run start, plus what
    the run added); `new_messages()` only what this run added, which is what a store appends.
    `usage` is the `RunUsage` passed with `usage=` (accumulated in place) or the run's own;
    `run_usage` is always this run's share alone.
    """

    output: OutputDataT
    _messages: list[ModelMessage]
    _new_message_index: int
    run_id: str
    conversation_id: str
    usage: RunUsage
    run_usage: RunUsage
    model_name: str | None = None

    def __repr__(self) -> str:
        return f'AgentRunResult(output={self.output!r}, run_id={self.run_id!r}, messages={len(self._messages)})'

    def all_messages(self) -> list[ModelMessage]:
        return self._messages

    def new_messages(self) -> list[ModelMessage]:
        return self._messages[self._new_message_index :]

    def all_messages_json(self) -> bytes:
        return ModelMessagesTypeAdapter.dump_json(self._messages)

    def new_messages_json(self) -> bytes:
        return ModelMessagesTypeAdapter.dump_json(self.new_messages())

    @property
    def new_message_index(self) -> int:
        return self._new_message_index

    @property
    def response(self) -> ModelResponse:
        """The last response of the history."""
        for message in reversed(self._messages):
            if isinstance(message, ModelResponse):
                return message
        raise ValueError('this run has no model response')


RunResult = AgentRunResult
