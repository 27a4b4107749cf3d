"""What a run produces: text, a structured value through the output tool, or deferred tool calls."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field
from typing import Any

from ..exceptions import UserError
from ..messages import ToolCallPart
from ..models import ToolDefinition

__all__ = [
    'DeferredToolRequests',
    'DeferredToolResults',
    'OutputSpec',
    'ToolApproved',
    'ToolDenied',
]

OUTPUT_TOOL_NAME = 'final_result'


@dataclass
class DeferredToolRequests:
    """The output of a run that paused on tool calls the application must resolve.

    `approvals` are calls to tools declared `requires_approval=True`; `calls` are calls the
    application executes itself. Resume with `deferred_tool_results=` in a new run.
    """

    calls: list[ToolCallPart] = field(default_factory=list)
    approvals: list[ToolCallPart] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolApproved:
    """Approve a deferred call, optionally with arguments that replace the model's."""

    override_args: dict[str, Any] | None = None


@dataclass
class ToolDenied:
    """Deny a deferred call; `message` is what the model is told."""

    message: str = 'The tool call was denied.'


@dataclass
class DeferredToolResults:
    """Results for the calls a `DeferredToolRequests` listed, keyed by tool call id."""

    calls: dict[str, Any] = field(default_factory=dict)
    approvals: dict[str, bool | ToolApproved | ToolDenied] = field(default_factory=dict)


def _members(output_type: Any) -> list[Any]:
    if isinstance(output_type, (list, tuple)):
        return [m for item in output_type for m in _members(item)]
    if typing.get_origin(output_type) in (typing.Union, types.UnionType):
        return [m for item in typing.get_args(output_type) for m in _members(item)]
    return [output_type]


class OutputSpec:
    """How a run's output type is offered to the model and validated.

    `str` allows a text answer; `DeferredToolRequests` allows pausing on deferred calls; any other
    type becomes the `final_result` output tool (object types as they are, others wrapped in a
    `response` field).
    """

    def __init__(self, output_type: Any) -> None:
        members = _members(output_type)
        self.allow_text = str in members
        self.allow_deferred = DeferredToolRequests in members
        structured = [m for m in members if m is not str and m is not DeferredToolRequests]
        if not self.allow_text and not structured:
            raise UserError('output_type must include `str` or a structured type, not only DeferredToolRequests')
        self.structured: Any = None
        if structured:
            self.structured = structured[0] if len(structured) == 1 else typing.Union[tuple(structured)]  # noqa: UP007
        self._adapter: Any = None
        self._wrapped = False
        self._tool: ToolDefinition | None = None

    @property
    def output_tools(self) -> list[ToolDefinition]:
        if self.structured is None:
            return []
        if self._tool is None:
            self._build()
        assert self._tool is not None
        return [self._tool]

    def _build(self) -> None:
        import pydantic

        from ._tools import _clean_schema

        adapter = pydantic.TypeAdapter(self.structured)
        schema = adapter.json_schema()
        if schema.get('type') != 'object' or 'properties' not in schema:  # not model-like (a dict, a list...)
            self._wrapped = True
            wrapper = pydantic.create_model('final_result', response=(self.structured, ...))
            adapter = pydantic.TypeAdapter(wrapper)
            schema = adapter.json_schema()
        self._adapter = adapter
        description = 'The final response which ends this conversation'
        self._tool = ToolDefinition(OUTPUT_TOOL_NAME, _clean_schema(schema), description, kind='output')

    def validate(self, args: str | dict[str, Any] | None) -> Any:
        """The structured output from the output tool's arguments; raises `ToolArgsError`."""
        import pydantic

        from ._tools import ToolArgsError

        if self._adapter is None:
            self._build()
        try:
            if isinstance(args, str):
                value = self._adapter.validate_json(args or '{}')
            else:
                value = self._adapter.validate_python(args or {})
        except pydantic.ValidationError as exc:
            raise ToolArgsError(list(exc.errors(include_url=False, include_context=False))) from None  # type: ignore[arg-type]
        return value.response if self._wrapped else value
