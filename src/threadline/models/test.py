"""`TestModel`: a deterministic model for tests that calls every tool once, then answers.

On each request:
1. if the agent has function tools and the history holds no response yet, it calls each tool (or
   the `call_tools` subset) once, with arguments generated from the tool's JSON schema;
2. else, if the last request retried some tool calls, it calls those tools again;
3. else it answers: `custom_output_text`, or (for text output) the JSON of every tool result in
   the history keyed by tool name, or a call to the output tool with `custom_output_args` (the
   output's value: wrapped in `{"response": ...}` when the output is not an object) or
   generated arguments.
Generated arguments depend only on the schema and `seed`: strings are `'a'` (seed 0), `'b'`, ...;
integers `seed`; floats `float(seed)`; booleans `seed % 2 == 1`; only required properties.
"""

from __future__ import annotations

import string
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import msgspec

from threadline.exceptions import UserError
from threadline.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RequestUsage,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from threadline.models._base import Model, ModelRequestParameters, ModelSettings, ToolDefinition
from threadline.models._estimate import estimate_tokens, estimate_usage
from threadline.models._stream import ModelStreamEvent, StreamedResponse

__all__ = ['TestModel']


class TestModel(Model):
    """A model that needs no network and answers deterministically (see the module docstring)."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        *,
        call_tools: list[str] | Literal['all'] = 'all',
        custom_output_text: str | None = None,
        custom_output_args: Any = None,
        seed: int = 0,
        model_name: str = 'test',
    ) -> None:
        self.call_tools = call_tools
        self.custom_output_text = custom_output_text
        self.custom_output_args = custom_output_args
        self.seed = seed
        self._model_name = model_name
        self.last_model_request_parameters: ModelRequestParameters | None = None

    @property
    def priced(self) -> bool:
        return False  # a local model: no price to look up

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def system(self) -> str:
        return 'test'

    async def request(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        self.last_model_request_parameters = model_request_parameters
        response = self._respond(messages, model_request_parameters)
        response.usage = estimate_usage([*messages, response])
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: Sequence[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: object = None,
    ) -> AsyncIterator[Any]:
        """Streams text word by word (a single long word in two halves); calls arrive whole. Usage
        starts from the estimate of `messages` and grows with each word."""
        self.last_model_request_parameters = model_request_parameters
        response = self._respond(messages, model_request_parameters)
        yield _WordStream(response, estimate_usage(messages))

    def _respond(self, messages: Sequence[ModelMessage], params: ModelRequestParameters) -> ModelResponse:
        tools = self._tools_to_call(params)
        if tools and not any(isinstance(m, ModelResponse) for m in messages):
            return self._response(self._calls(tools, fresh_ids=False))
        last = messages[-1] if messages else None
        if isinstance(last, ModelRequest):
            retried = [p.tool_name for p in last.parts if isinstance(p, ToolReturnPart) and p.outcome == 'retried']
            if retried:
                by_name = {t.name: t for t in [*params.function_tools, *params.output_tools]}
                again = [by_name[name] for name in retried if name in by_name]
                if again:
                    return self._response(self._calls(again, fresh_ids=True))
        return self._response([self._output(messages, params)])

    def _tools_to_call(self, params: ModelRequestParameters) -> list[ToolDefinition]:
        tools = params.function_tools
        if self.call_tools == 'all':
            return list(tools)
        known = {t.name: t for t in tools}
        for name in self.call_tools:
            if name not in known:
                raise UserError(f'TestModel(call_tools=...): unknown tool {name!r}; the agent has {sorted(known)}')
        return [known[name] for name in self.call_tools]

    def _calls(self, tools: list[ToolDefinition], *, fresh_ids: bool) -> list[Any]:
        calls: list[Any] = []
        seen: dict[str, int] = {}
        for tool in tools:
            if fresh_ids and tool.kind != 'output':
                call_id = f'pyd_ai_{uuid.uuid4().hex}'
            else:
                seen[tool.name] = seen.get(tool.name, 0) + 1
                suffix = '' if seen[tool.name] == 1 else f'__{seen[tool.name]}'
                call_id = f'pyd_ai_tool_call_id__{tool.name}{suffix}'
            args = self._output_args(tool) if tool.kind == 'output' else None
            calls.append(
                ToolCallPart(tool.name, args or generate_args(tool.parameters_json_schema, self.seed), call_id)
            )
        return calls

    def _output_args(self, tool: ToolDefinition) -> Any:
        """`custom_output_args` for output tool `tool` (None when not set): the output's value,
        wrapped in `{"response": ...}` when the output is not an object."""
        args = self.custom_output_args
        if args is None:
            return None
        args = args if isinstance(args, dict) else msgspec.to_builtins(args)
        return {tool.outer_typed_dict_key: args} if tool.outer_typed_dict_key else args

    def _output(self, messages: Sequence[ModelMessage], params: ModelRequestParameters) -> Any:
        if self.custom_output_text is not None:
            return TextPart(self.custom_output_text)
        if params.allow_text_output or not params.output_tools:
            results = {
                part.tool_name: part.content
                for message in messages
                if isinstance(message, ModelRequest)
                for part in message.parts
                if isinstance(part, ToolReturnPart)
            }
            text = _json_text(results) if results else 'success (no tool calls)'
            return TextPart(text)
        tool = params.output_tools[0]
        args = self._output_args(tool)
        if args is None:
            args = generate_args(tool.parameters_json_schema, self.seed)
        return ToolCallPart(tool.name, args, f'pyd_ai_tool_call_id__{tool.name}')

    def _response(self, parts: list[Any]) -> ModelResponse:
        return ModelResponse(parts=parts, model_name=self.model_name, provider_name='test')


def generate_args(schema: dict[str, Any], seed: int) -> dict[str, Any]:
    """Arguments that satisfy `schema` (an object schema), deterministic in `seed`."""
    value = _generate(schema, seed, schema.get('$defs', {}))
    return value if isinstance(value, dict) else {}


def _generate(schema: dict[str, Any], seed: int, defs: dict[str, Any]) -> Any:
    ref = schema.get('$ref')
    if isinstance(ref, str):
        return _generate(defs.get(ref.rsplit('/', 1)[-1], {}), seed, defs)
    if 'const' in schema:
        return schema['const']
    if schema.get('enum'):
        return schema['enum'][0]
    for key in ('anyOf', 'oneOf', 'allOf'):
        if schema.get(key):
            return _generate(schema[key][0], seed, defs)
    kind = schema.get('type')
    if isinstance(kind, list):
        kind = next((k for k in kind if k != 'null'), 'null')
    if kind == 'object' or 'properties' in schema:
        required = schema.get('required', [])
        props = schema.get('properties', {})
        value = {name: _generate(props.get(name, {}), seed, defs) for name in required}
        extra = schema.get('additionalProperties')
        if not props and isinstance(extra, dict):
            value['additionalProperty'] = _generate(extra, seed, defs)  # a mapping gets one entry
        return value
    if kind == 'array':
        if schema.get('prefixItems'):
            return [_generate(item, seed, defs) for item in schema['prefixItems']]
        return [_generate(schema.get('items', {}), seed, defs)]  # one item, as the reference
    if kind == 'string':
        return string.ascii_lowercase[seed % 26]
    if kind == 'integer':
        return seed
    if kind == 'number':
        return float(seed)
    if kind == 'boolean':
        return seed % 2 == 1
    if kind == 'null':
        return None
    return string.ascii_lowercase[seed % 26]


class _WordStream(StreamedResponse):
    def __init__(self, response: ModelResponse, usage: RequestUsage) -> None:
        super().__init__(response.model_name or 'test', response.provider_name)
        self._response = response
        self.usage = usage

    async def _events(self) -> AsyncIterator[ModelStreamEvent]:
        for index, part in enumerate(self._response.parts):
            if isinstance(part, TextPart):
                yield self.parts.text(index, '')  # as the reference: the part starts empty, words follow
                for chunk in _chunks(part.content):
                    self.usage = self.usage + RequestUsage(output_tokens=estimate_tokens(chunk))
                    yield self.parts.text(index, chunk)
            else:
                yield self.parts.whole(index, part)


def _chunks(text: str) -> list[str]:
    words = text.split(' ')
    if len(words) == 1:
        return [text[: len(text) // 2], text[len(text) // 2 :]] if len(text) > 2 else [text]
    return [w + ' ' for w in words[:-1]] + [words[-1]]


def _json_text(value: object) -> str:
    """Tool results as the JSON text the reference's TestModel answers with: pydantic models,
    dataclasses, file content and bytes (as UTF-8 text) included."""
    from pydantic_core import to_json

    return to_json(value).decode()
