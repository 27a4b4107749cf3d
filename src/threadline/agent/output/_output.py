"""What a run produces: text, a structured value through the output tool, or deferred tool calls."""

from __future__ import annotations

import contextlib
import inspect
import re
import types
import typing
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import msgspec
import typing_extensions

from threadline.agent.output._deferred_types import DeferredToolRequests
from threadline.agent.output._json_text import (
    model_prompted_instructions,
    partial_json,
    prompted_instructions,
    without_fences,
)
from threadline.agent.output._types import NativeOutput, PromptedOutput, TextOutput, ToolOutput
from threadline.agent.tools._schema import drop_property_titles, is_model_like
from threadline.agent.tools._tool import Tool, ToolArgsError, takes_run_context
from threadline.exceptions import UserError
from threadline.messages import BinaryImage, ToolCallPart
from threadline.models import ModelRequestParameters, OutputObjectDefinition, ToolDefinition

if TYPE_CHECKING:
    from threadline.agent._chain import CapabilityChain
    from threadline.agent._context import RunContext

__all__ = ['OutputSpec']

OUTPUT_TOOL_NAME = 'final_result'


def _refuse_markers_inside(mode: NativeOutput | PromptedOutput) -> None:
    """`DeferredToolRequests` and `BinaryImage` are never JSON the model writes: they go beside a
    native or prompted output marker, not inside it (a `UserError` naming the fix)."""
    kind = type(mode).__name__
    for marker in (DeferredToolRequests, BinaryImage):
        if marker in _members(mode.outputs):
            raise UserError(
                f'`{kind}` cannot contain `{marker.__name__}`. Include it alongside the marker instead: '
                f'`output_type=[{kind}(...), {marker.__name__}]`'
            )


def _members(output_type: Any) -> list[Any]:
    if isinstance(output_type, (list, tuple)):
        return [m for item in output_type for m in _members(item)]
    if typing.get_origin(output_type) in (typing.Union, types.UnionType):
        return [m for item in typing.get_args(output_type) for m in _members(item)]
    return [output_type]


def _unannotated(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = annotation.__origin__
    return annotation


def _response_of(annotation: Any) -> Any:
    """A TypedDict `{"response": annotation}`: how a type that is not an object is asked for."""
    return typing_extensions.TypedDict('final_result', {'response': annotation})  # type: ignore[operator]


_NOT_IN_TOOL_NAMES = re.compile(r'[^a-zA-Z0-9_-]')


def _is_function(target: Any) -> bool:
    return callable(target) and not isinstance(target, type) and typing.get_origin(target) is None


def _label(target: Any) -> str:
    return getattr(target, '__name__', None) or str(target)


class _Output:
    """One structured output as the model fills it in: a type to validate into, or a function
    whose parameters are the arguments and whose return value is the output."""

    def __init__(self, target: Any, tool_name: str, description: str | None, strict: bool | None, retries: int | None):

        import pydantic

        self.target, self.name, self.strict, self.max_retries = target, tool_name, strict, retries
        self.function: Tool[Any] | None = None
        self.wrapped = False
        self.doc: str | None = None
        self.single_field: str | None = None
        """For a function that takes one value (besides a `RunContext`): its parameter's name.
        Output hooks see that value, not `{name: value}`, as in the reference."""
        if _is_function(target):
            self.function = Tool(target, name=tool_name, description=description)
            self.schema = self.function.tool_def.parameters_json_schema
            self.single_field = self.function.single_field_name
            self.full_schema = self.schema
            self.description = description if description is not None else self.function.description
            return

        if is_model_like(_unannotated(target)):
            adapter = pydantic.TypeAdapter(target)
            schema = adapter.json_schema()
        else:  # a list, a dict, a primitive...: the model fills in {"response": ...}
            self.wrapped = True
            schema = pydantic.TypeAdapter(_response_of(target)).json_schema()
            # As the reference takes it: the value, or a JSON string of it (some models send one).
            lenient: Any = typing.Union[target, pydantic.Json[target]]  # type: ignore[misc]  # noqa: UP007
            adapter = pydantic.TypeAdapter(_response_of(lenient))
        self.adapter = adapter
        doc = inspect.getdoc(target) if isinstance(target, type) and target.__doc__ and not self.wrapped else None
        cleaned = drop_property_titles(schema)
        # As the reference offers it: the type's own title stays (it names the output) and property
        # titles go; a docstring describes the tool (after a given description), not its arguments.
        self.schema = {
            key: value
            for key, value in cleaned.items()
            if not (key == 'title' and self.wrapped) and not (key == 'description' and doc)
        }
        self.full_schema = self.schema
        self.description = '. '.join(text for text in (description, doc) if text) or None
        self.doc = doc

    @property
    def object_def(self) -> OutputObjectDefinition:
        """The output as an object definition (what output hooks are told in tool mode)."""
        name = self.schema.get('title') or _label(self.target)
        return OutputObjectDefinition(self.schema, name=name, description=self.description, strict=self.strict)

    def tool_def(self, multiple: bool) -> ToolDefinition:
        text = self.description or 'The final response which ends this conversation'
        if multiple and self.description is None:
            text = f'{_label(self.target)}: {text}'
        return ToolDefinition(
            self.name,
            self.schema,
            text,
            kind='output',
            strict=self.strict,
            outer_typed_dict_key='response' if self.wrapped else None,
        )

    def validate(self, args: Any, *, partial: bool = False) -> Any:
        """The model's arguments validated: the type's value, or the function's keyword arguments
        (raises pydantic's `ValidationError`, which `OutputSpec` turns into a retry). `partial`:
        the arguments are still streaming, so truncated JSON and a last item cut short pass."""

        if self.function is not None:
            arguments = self.function.validate_args_or_raise(args, partial=partial)
            return arguments[self.single_field] if self.single_field is not None else arguments
        if isinstance(args, str):
            text = without_fences(args) or '{}'
            value = self.adapter.validate_json(
                text, experimental_allow_partial='trailing-strings' if partial else 'off'
            )
        else:
            value = self.adapter.validate_python(args or {}, experimental_allow_partial=partial)
        return value['response'] if self.wrapped else value

    async def process(self, ctx: RunContext[Any], value: Any) -> Any:
        """The output from a validated value: the output function's result, or the value."""
        if self.function is not None:
            arguments = {self.single_field: value} if self.single_field is not None else value
            return await self.function.call(ctx, arguments)
        return value


@dataclass
class OutputContext:
    """What output hooks are told about the output in hand (pydantic-ai's fields)."""

    mode: str
    output_type: Any
    object_def: OutputObjectDefinition | None
    has_function: bool
    function_name: str | None = None
    tool_call: ToolCallPart | None = None
    tool_def: ToolDefinition | None = None
    allows_text: bool = False
    allows_image: bool = False
    allows_deferred_tools: bool = False


class OutputSpec:
    """How a run's output type is offered to the model and turned into the output.

    Rules (pydantic-ai 2.62's, checked against it):
    - `str` allows a text answer, `TextOutput(fn)` one passed through `fn`; `DeferredToolRequests`
      allows pausing on deferred calls; `None` beside another type lets a response with no
      output (no parts, blank text, thinking only) be the output `None`.
    - Structured outputs (types, functions, `ToolOutput`) are output tools: `final_result` when
      there is one, `final_result_<Name>` each when there are several (a `ToolOutput` names its
      own). A type's docstring (a function's) describes its tool.
    - `NativeOutput` / `PromptedOutput` ask for JSON text instead: one schema, the member's own, or
      for several members `{"result": {"kind": <Name>, "data": ...}}`. They exclude output tools.
    """

    def __init__(self, output_type: Any) -> None:

        members = _members(output_type)
        if all(m is None or m is type(None) for m in members):
            raise UserError('At least one output type must be provided other than `None`.')
        if sum(1 for m in members if m is str or isinstance(m, TextOutput)) > 1:
            raise UserError('Only one `str` or `TextOutput` is allowed.')
        self.allow_deferred = DeferredToolRequests in members
        self.allows_none = any(m is None or m is type(None) for m in members)
        self.text_function: Any = next((m.output_function for m in members if isinstance(m, TextOutput)), None)
        self.allow_text = str in members or self.text_function is not None
        modes = [m for m in members if isinstance(m, (NativeOutput, PromptedOutput))]
        structured = [
            m
            for m in members
            if m not in (str, DeferredToolRequests, None, type(None))
            and not isinstance(m, (TextOutput, NativeOutput, PromptedOutput))
        ]
        if modes and len([m for m in members if m is not DeferredToolRequests]) > 1:
            raise UserError(f'`{type(modes[0]).__name__}` must be the only output type.')
        if modes:
            _refuse_markers_inside(modes[0])
        self.mode = 'text'
        self.output_object: OutputObjectDefinition | None = None
        self.template: str | None = None
        self.prompted_template: str | Literal[False] | None = None
        self._tools: dict[str, _Output] = {}
        self._tool_defs: dict[str, ToolDefinition] = {}
        self._json: list[_Output] = []
        self._structured = structured
        self.auto = False
        self._auto_object: OutputObjectDefinition | None = None
        """Only plain types and functions (no `ToolOutput`, no text): the reference's 'auto' mode,
        output tools that also take the output as JSON text."""
        if modes:
            self._build_json(modes[0])
        elif structured:
            self.mode = 'tool'
            self.auto = not self.allow_text and not any(isinstance(m, ToolOutput) for m in structured)
            if self.auto:
                self._json = [_Output(m, _label(m), None, None, None) for m in structured]
        if not self.allow_text and self.mode == 'text':
            raise UserError('output_type must include `str` or a structured type, not only DeferredToolRequests')
        if self.mode in ('native', 'prompted'):
            self.allow_text = True

    @property
    def accepts_text(self) -> bool:
        """Whether a text answer can be the output (as text, or as JSON of a structured one)."""
        return self.allow_text or self.auto

    @property
    def structured_text(self) -> bool:
        """Whether a text answer is validated against a schema (native, prompted, auto): such
        text, when valid, is a deliberate final result even beside function tool calls."""
        return self.mode in ('native', 'prompted') or self.auto

    # -- output tools ---------------------------------------------------------------------------
    @property
    def output_tools(self) -> list[ToolDefinition]:
        if self.mode != 'tool':
            return []
        if not self._tools:
            self._build_tools()
        return list(self._tool_defs.values())

    def _build_tools(self) -> None:

        multiple = len(self._structured) > 1
        for member in self._structured:
            spec = member if isinstance(member, ToolOutput) else ToolOutput(member)
            # As the reference names them: a generic's brackets go, and a name taken gets _2, _3...
            base = spec.name or (
                f'final_result_{_NOT_IN_TOOL_NAMES.sub("", _label(spec.output))}' if multiple else OUTPUT_TOOL_NAME
            )
            name, number = base, 1
            while name in self._tools:
                number += 1
                name = f'{base}_{number}'
            self._tools[name] = _Output(spec.output, name, spec.description, spec.strict, spec.max_retries)
        # Built once: every request offers the same definitions.
        self._tool_defs = {name: o.tool_def(len(self._tools) > 1) for name, o in self._tools.items()}

    def max_retries(self, tool_name: str) -> int | None:
        output = self._tools.get(tool_name)
        return output.max_retries if output is not None else None

    def context(
        self, output: _Output | None, call: Any = None, tool_def: ToolDefinition | None = None
    ) -> OutputContext:
        target = output.target if output is not None else str
        function = output is not None and output.function is not None
        return OutputContext(
            mode=self.mode,
            output_type=target if isinstance(target, type) else None,
            object_def=self.output_object or (output.object_def if output is not None else None),
            has_function=function or self.text_function is not None,
            function_name=_label(target) if function else None,
            tool_call=call,
            tool_def=tool_def,
            allows_text=self.allow_text,
            allows_deferred_tools=self.allow_deferred,
        )

    async def from_call(self, ctx: RunContext[Any], chain: CapabilityChain[Any], call: ToolCallPart) -> Any:
        """The output an output tool call carries (raises `ToolArgsError` or `ModelRetry`), through
        the capabilities' output hooks."""
        if not self._tools:
            self._build_tools()
        output = self._tools[call.tool_name]
        validate = partial(output.validate, partial=ctx.partial_output)
        with _validation_is_a_retry():
            if not chain.has_output_hooks():
                return await output.process(ctx, validate(call.args))
            context = self.context(output, call, self._tool_defs[call.tool_name])
            return await _lifecycles(ctx, chain, context, call.args, validate, output.process)

    # -- JSON text (native / prompted) ------------------------------------------------------------
    def _build_json(self, marker: Any) -> None:

        self.mode = 'native' if isinstance(marker, NativeOutput) else 'prompted'
        self._json = [_Output(m, _label(m), None, None, None) for m in marker.outputs]
        self.output_object = self._json_object(marker.name, marker.description, getattr(marker, 'strict', None))
        template = getattr(marker, 'template', None)
        if self.mode == 'prompted':
            self.prompted_template = template  # the marker's own (None: the default one)
        if self.mode == 'prompted' and template is not False:
            self.template = prompted_instructions(self.output_object, template)

    def _json_object(self, name: str | None, description: str | None, strict: bool | None) -> OutputObjectDefinition:
        """The JSON the members of `_json` are asked for: the one member's own schema, or for
        several `{"result": {"kind": <Name>, "data": ...}}`."""
        if len(self._json) == 1:
            only = self._json[0]
            schema = only.full_schema
            name = name or schema.get('title') or _label(only.target)
            description = description or only.description
        else:
            schema = {
                'type': 'object',
                'properties': {'result': {'anyOf': [self._kind_schema(o) for o in self._json]}},
                'required': ['result'],
                'additionalProperties': False,
            }
        return OutputObjectDefinition(schema, name=name, description=description, strict=strict)

    def for_mode(self, params: ModelRequestParameters, mode: str) -> ModelRequestParameters:
        """`params` for a model that asks for structured output as JSON text (`mode` 'native' or
        'prompted') in place of output tools, as pydantic-ai's 'auto' mode lets a model choose
        (Claude while it thinks). Only plain output types can move: a `ToolOutput` stays a tool.
        The JSON is the one `NativeOutput` of the same types asks for, and the answer is read as
        this output's JSON text already is."""
        if mode not in ('native', 'prompted') or not self.auto or not params.output_tools:
            return params
        if self._auto_object is None:
            self._auto_object = self._json_object(name=None, description=None, strict=None)
        instructions = params.instructions
        if mode == 'prompted':
            instructions = '\n\n'.join(t for t in (instructions, model_prompted_instructions(self._auto_object)) if t)
        return replace(
            params,
            output_mode=mode,
            output_tools=[],
            output_object=self._auto_object,
            allow_text_output=True,
            instructions=instructions,
        )

    @staticmethod
    def _kind_schema(output: _Output) -> dict[str, Any]:
        data = {k: v for k, v in output.full_schema.items() if k != 'title'}
        schema = {
            'type': 'object',
            'properties': {'kind': {'type': 'string', 'const': _label(output.target)}, 'data': data},
            'required': ['kind', 'data'],
            'additionalProperties': False,
            'title': _label(output.target),
        }
        return {**schema, 'description': output.doc} if output.doc else schema

    async def from_text(self, ctx: RunContext[Any], chain: CapabilityChain[Any], text: str) -> Any:
        """The output a text answer carries (raises `ToolArgsError` or `ModelRetry`), through the
        capabilities' output hooks."""
        chosen: list[_Output] = []

        as_json = self.mode in ('native', 'prompted') or self.auto

        def validate(raw: Any) -> Any:
            if not as_json:
                return raw
            output, value = self._json_member(raw, partial=ctx.partial_output)
            chosen.append(output)
            return value

        async def process(ctx: RunContext[Any], value: Any) -> Any:
            if chosen:
                return await chosen[-1].process(ctx, value)
            return await self._text_function(ctx, value)

        with _validation_is_a_retry():
            if not chain.has_output_hooks():
                return await process(ctx, validate(text))
            only = self._json[0] if len(self._json) == 1 else None
            if not as_json:  # plain text is not validated, only processed
                return await chain.output_lifecycle(ctx, 'process', self.context(only), text, partial(process, ctx))
            return await _lifecycles(ctx, chain, self.context(only), text, validate, process)

    async def from_none(self, ctx: RunContext[Any], chain: CapabilityChain[Any]) -> Any:
        """The output `None` of a response with none, through the capabilities' process hooks."""
        if not chain.has_output_hooks():
            return None
        context = replace(self.context(None), mode='text', output_type=type(None), has_function=False)

        async def process(value: Any) -> Any:
            return value

        return await chain.output_lifecycle(ctx, 'process', context, None, process)

    async def _text_function(self, ctx: RunContext[Any], text: str) -> Any:
        if self.text_function is None:
            return text

        fn = self.text_function
        result = fn(ctx, text) if takes_run_context(fn) else fn(text)
        return await result if inspect.isawaitable(result) else result

    def _json_member(self, text: str, *, partial: bool) -> tuple[_Output, Any]:
        """The member a JSON answer is for, and its validated value (`partial`: still streaming)."""

        if len(self._json) == 1:
            return self._json[0], self._json[0].validate(text, partial=partial)

        try:
            document = partial_json(text) if partial else msgspec.json.decode(text)
        except (msgspec.DecodeError, ValueError) as exc:
            raise ToolArgsError(
                [{'type': 'json_invalid', 'loc': [], 'msg': f'Invalid JSON: {exc}', 'input': text}]
            ) from None
        result = document.get('result') if isinstance(document, dict) else None
        kind = result.get('kind') if isinstance(result, dict) else None
        chosen = next((o for o in self._json if _label(o.target) == kind), None)
        if chosen is None or not isinstance(result, dict):
            kinds = [_label(o.target) for o in self._json]
            raise ToolArgsError(
                [
                    {
                        'type': 'union_tag_invalid',
                        'loc': ['result', 'kind'],
                        'msg': f'kind must be one of {kinds}',
                        'input': kind,
                    }
                ]
            )
        return chosen, chosen.validate(result.get('data'), partial=partial)


async def _lifecycles(
    ctx: RunContext[Any],
    chain: CapabilityChain[Any],
    context: OutputContext,
    raw: Any,
    validate: Callable[[Any], Any],
    process: Callable[[RunContext[Any], Any], Awaitable[Any]],
) -> Any:
    """Validation, then processing, each as a hook lifecycle of `chain`."""

    async def validating(value: Any) -> Any:
        return validate(value)

    async def processing(value: Any) -> Any:
        return await process(ctx, value)

    validated = await chain.output_lifecycle(ctx, 'validate', context, raw, validating)
    return await chain.output_lifecycle(ctx, 'process', context, validated, processing)


@contextlib.contextmanager
def _validation_is_a_retry() -> Iterator[None]:
    """A `pydantic.ValidationError` raised while an output is validated or processed (by an output
    hook or an output function) asks the model again, as the output's own validation does."""
    import pydantic

    try:
        yield
    except pydantic.ValidationError as exc:
        raise ToolArgsError(list(exc.errors(include_url=False, include_context=False))) from None  # type: ignore[arg-type]
