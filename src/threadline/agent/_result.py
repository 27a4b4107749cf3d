"""`AgentRunResult`: what a finished run gives back."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, get_args

import msgspec
from typing_extensions import TypeVar  # PEP 696 defaults (3.13 has them in typing)

from threadline.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse, RunUsage

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler
    from pydantic_core import CoreSchema

__all__ = ['AgentRunResult', 'OutputDataT', 'RunResult']

OutputDataT = TypeVar('OutputDataT', default=str)  # `Agent[Deps]` is `Agent[Deps, str]`, as pydantic-ai's


class AgentRunResult(Generic[OutputDataT]):
    """The output of a run and the history it leaves behind.

    `all_messages()` is the run's history (the input history as cleaned at run start, plus what
    the run added); `new_messages()` only what this run added, which is what a store appends.
    `usage` is the `RunUsage` passed with `usage=` (accumulated in place) or the run's own;
    `run_usage` is always this run's share alone. Every argument but `output` is optional, so a
    test can build one by hand. (A plain class, not a dataclass: pydantic only asks a
    parameterized class that is not a dataclass for its own schema; see below.)
    """

    __slots__ = (
        '_messages',
        '_new_message_index',
        'conversation_id',
        'metadata',
        'model_name',
        'output',
        'output_tool_name',
        'run_id',
        'run_usage',
        'usage',
    )

    def __init__(
        self,
        output: OutputDataT,
        _messages: list[ModelMessage] | None = None,
        _new_message_index: int = 0,
        run_id: str | None = None,
        conversation_id: str | None = None,
        usage: RunUsage | None = None,
        run_usage: RunUsage | None = None,
        model_name: str | None = None,
        output_tool_name: str | None = None,
        metadata: dict[str, object] | None = None,
    ) -> None:
        self.output = output
        self.metadata = metadata
        """The run's metadata (`Agent(metadata=)` and `run(metadata=)`), as resolved when it ended."""
        self.output_tool_name = output_tool_name
        """The output tool whose call carried the output (None: the output was text)."""
        self._messages: list[ModelMessage] = [] if _messages is None else _messages
        self._new_message_index = _new_message_index
        self.run_id = run_id
        self.conversation_id = conversation_id
        self.usage = RunUsage() if usage is None else usage
        self.run_usage = self.usage if run_usage is None else run_usage
        self.model_name = model_name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AgentRunResult):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

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
    def timestamp(self) -> datetime:
        """When the last response was made (the run's answer)."""
        return self.response.timestamp

    @property
    def response(self) -> ModelResponse:
        """The last response of the history."""
        for message in reversed(self._messages):
            if isinstance(message, ModelResponse):
                return message
        raise ValueError('this run has no model response')

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """On a user's pydantic model, a run result stores as the reference's does: `messages`,
        `new_message_index`, `output_tool_name`, `usage`, `run_id`, `conversation_id`, `metadata`,
        `traceparent` and `output` (validated as `AgentRunResult[T]`'s `T`), so one stored by either
        library loads in the other."""
        from pydantic_core import core_schema as cs

        args = get_args(source)
        output = handler.generate_schema(args[0]) if args else cs.any_schema()
        fields = {name: cs.typed_dict_field(cs.any_schema(), required=False) for name in _WIRE_EXTRAS}
        fields['messages'] = cs.typed_dict_field(cs.list_schema(cs.any_schema()))
        fields['output'] = cs.typed_dict_field(output)
        load = cs.no_info_after_validator_function(cls._from_wire, cs.typed_dict_schema(fields))
        return cs.json_or_python_schema(
            json_schema=load,
            python_schema=cs.union_schema([cs.is_instance_schema(cls), load]),
            serialization=cs.plain_serializer_function_ser_schema(cls._to_wire),
        )

    @classmethod
    def _from_wire(cls, data: dict[str, Any]) -> AgentRunResult[Any]:
        usage = msgspec.convert(data.get('usage') or {}, RunUsage)
        messages = ModelMessagesTypeAdapter.validate_python(data['messages'])
        # Not on the wire (the reference has no such field): the model that answered last.
        answered = [m.model_name for m in messages if isinstance(m, ModelResponse)]
        return cls(
            data['output'],
            messages,
            int(data.get('new_message_index') or 0),
            data.get('run_id'),
            data.get('conversation_id'),
            usage,
            usage,
            model_name=answered[-1] if answered else None,
            output_tool_name=data.get('output_tool_name'),
            metadata=data.get('metadata'),
        )

    def _to_wire(self) -> dict[str, Any]:
        return {
            'messages': ModelMessagesTypeAdapter.dump_python(self._messages, mode='json'),
            'new_message_index': self._new_message_index,
            'output_tool_name': self.output_tool_name,
            'usage': msgspec.to_builtins(self.usage),
            'run_id': self.run_id,
            'conversation_id': self.conversation_id,
            'metadata': self.metadata,
            'traceparent': None,
            'output': self.output,
        }


_WIRE_EXTRAS = (
    'new_message_index',
    'output_tool_name',
    'usage',
    'run_id',
    'conversation_id',
    'metadata',
    'traceparent',
)


RunResult = AgentRunResult
