"""Tools: plain functions the model can call, with a JSON schema and argument validation built
from the function's signature and docstring (by pydantic, imported when the first tool is made)."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, Generic

from threadline.agent._context import AgentDepsT, RunContext
from threadline.agent.tools._docstrings import DocstringStyle, parse_docstring
from threadline.agent.tools._schema import SingleArgument, drop_property_titles, is_model_like
from threadline.exceptions import ModelRetry, ToolArgsError, UserError
from threadline.models import ToolDefinition

__all__ = ['Tool', 'ToolArgsError', 'takes_run_context', 'validate_with']


def validate_with(validator: Any, args: str | dict[str, Any] | None) -> Any:
    """`args` (JSON text or a dict; empty means `{}`) through a pydantic validator (anything with
    `validate_json` / `validate_python`: a `TypeAdapter`, a model's schema validator); its errors
    become a `ToolArgsError`, the list sent back to the model."""
    import pydantic

    try:
        if isinstance(args, str):
            return validator.validate_json(args or '{}')
        return validator.validate_python(args or {})
    except pydantic.ValidationError as exc:
        raise ToolArgsError(list(exc.errors(include_url=False, include_context=False))) from None  # type: ignore[arg-type]


def _check_signature(function: Callable[..., object], takes_ctx: bool) -> None:
    """At registration, as pydantic-ai checks it: a tool that takes the context has it first
    (unannotated, or annotated `RunContext[...]`), and one that does not has no `RunContext`
    parameter. Annotations that cannot be resolved yet are left to the schema to report."""
    target = function if inspect.isfunction(function) or inspect.ismethod(function) else type(function).__call__
    try:
        hints = typing.get_type_hints(target)
        params = list(inspect.signature(function).parameters.values())
    except (NameError, TypeError, ValueError):
        return
    name = getattr(function, '__qualname__', repr(function))
    for index, param in enumerate(params):
        hint = hints.get(param.name)
        is_ctx = hint is RunContext or typing.get_origin(hint) is RunContext
        if takes_ctx and index == 0:
            if param.name in hints and not is_ctx:
                raise UserError(
                    f'Error generating schema for {name}: the first parameter of a tool that takes the context '
                    'must be annotated with RunContext[...] (or register it with tool_plain)'
                )
        elif is_ctx:
            raise UserError(
                f'Error generating schema for {name}: RunContext annotations can only be used with tools that '
                'take context (register it with tool, not tool_plain)'
            )


def takes_run_context(function: Callable[..., object]) -> bool:
    """Whether the first parameter's resolved annotation is `RunContext` (or `RunContext[...]`).

    Rules: hints are resolved at runtime; an annotation that cannot be resolved raises `UserError`
    naming it (a silent guess would call the function with the wrong arguments); a missing
    annotation means the function does not take a context.
    """
    target = function
    if not (inspect.isfunction(target) or inspect.ismethod(target)) and callable(target):
        target = type(target).__call__  # a callable instance: read its __call__
    params = [p for p in inspect.signature(function).parameters.values()]
    if not params:
        return False
    try:
        hints = typing.get_type_hints(target)
    except NameError as exc:
        name = getattr(function, '__qualname__', repr(function))
        raise UserError(
            f'Unable to resolve the type annotations of {name!r}: {exc}. Import every annotated type at '
            'runtime (not only under `if TYPE_CHECKING:`).'
        ) from None
    hint = hints.get(params[0].name)
    return hint is RunContext or typing.get_origin(hint) is RunContext


class Tool(Generic[AgentDepsT]):
    """A function the model may call.

    The JSON schema of its arguments comes from the signature (the `RunContext` parameter, when
    there is one, is not an argument) and the descriptions from its docstring (Google, NumPy or
    Sphinx style: `docstring_format`, inferred by default; see `_docstrings`).
    `requires_approval=True` defers every call until the application approves it. `strict` asks a
    provider that has a strict mode (OpenAI) to make the arguments always match the schema: None
    (the default) uses it when the schema allows it, False never, True always (rewriting the
    schema to fit, or refusing one that cannot). `defer_loading=True` hides the tool from the
    model until another tool reveals it (`ToolReturn(tools=[name])`; see `threadline.agent.tools._reveal`).

    Options, as pydantic-ai's: `prepare(ctx, tool_def)` reshapes the definition each step (None
    hides the tool); `args_validator(ctx, **args)` checks validated arguments and may raise
    `ModelRetry`; `timeout` seconds, past which the model is told the call timed out and may retry;
    `sequential=True` runs the tool alone, never beside other calls; `metadata` is the
    application's, kept on the definition and never sent.
    """

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        takes_ctx: bool | None = None,
        name: str | None = None,
        description: str | None = None,
        max_retries: int | None = None,
        requires_approval: bool = False,
        strict: bool | None = None,
        defer_loading: bool = False,
        prepare: Callable[..., Any] | None = None,
        args_validator: Callable[..., Any] | None = None,
        timeout: float | None = None,
        sequential: bool = False,
        metadata: dict[str, Any] | None = None,
        include_return_schema: bool | None = None,
        docstring_format: DocstringStyle = 'auto',
    ) -> None:
        self.function = function
        self.defer_loading = defer_loading
        self.prepare, self.args_validator, self.timeout = prepare, args_validator, timeout
        self.sequential, self.metadata = sequential, metadata
        self.include_return_schema = include_return_schema
        self.takes_ctx = takes_run_context(function) if takes_ctx is None else takes_ctx
        _check_signature(function, self.takes_ctx)
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise UserError(f'timeout must be > 0, got {timeout!r}')
        if max_retries is not None and max_retries < 0:
            raise UserError(f'max_retries must be >= 0, got {max_retries!r}')
        self.name = name or function.__name__
        self.max_retries = max_retries
        self.requires_approval = requires_approval
        self.strict = strict
        doc_description, self._param_docs = parse_docstring(function.__doc__, docstring_format)
        self.description = description if description is not None else doc_description
        self._is_async = inspect.iscoroutinefunction(function)
        self._validator: Any = None
        self._single: SingleArgument | None = None
        self._param_names: list[str] = []
        self._tool_def: ToolDefinition | None = None

    def __repr__(self) -> str:
        return f'Tool({self.name!r})'

    @property
    def tool_def(self) -> ToolDefinition:
        if self._tool_def is None:
            self._build()
        assert self._tool_def is not None
        return self._tool_def

    def _build(self) -> None:

        import pydantic

        signature = inspect.signature(self.function)
        params = list(signature.parameters.values())
        if self.takes_ctx:
            if not params:
                raise UserError(f'Tool {self.name!r} takes a RunContext but has no parameters')
            params = params[1:]
        try:
            hints = typing.get_type_hints(self.function, include_extras=True)
        except NameError as exc:
            raise UserError(f'Unable to resolve the type annotations of tool {self.name!r}: {exc}') from None
        single = self._single_argument(params, hints)
        if single is not None:
            self._build_single(single, hints)
            return
        fields: dict[str, Any] = {}
        for param in params:
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise UserError(f'Tool {self.name!r}: *args and **kwargs parameters are not supported')
            annotation = hints.get(param.name, Any)
            default = ... if param.default is param.empty else param.default
            doc = self._param_docs.get(param.name)
            fields[param.name] = (annotation, pydantic.Field(default, description=doc) if doc else default)
            self._param_names.append(param.name)
        config = pydantic.ConfigDict(extra='forbid', arbitrary_types_allowed=True)
        model = pydantic.create_model(f'{self.name}_args', __config__=config, **fields)
        self._validator = model
        schema = drop_property_titles(model.model_json_schema())
        schema.pop('title', None)  # the arguments model's name is ours, not the application's
        self._define(schema, hints)

    def _single_argument(self, params: list[inspect.Parameter], hints: dict[str, Any]) -> SingleArgument | None:
        """The lone model-like parameter, if the function has one (see `_schema`, rule 2)."""
        if len(params) != 1 or params[0].kind in (params[0].VAR_POSITIONAL, params[0].VAR_KEYWORD):
            return None
        param = params[0]
        annotation = hints.get(param.name, Any)
        if not is_model_like(annotation):
            return None
        if param.default is param.empty:
            return SingleArgument(param.name, annotation)
        return SingleArgument(param.name, annotation, param.default)

    def _build_single(self, single: SingleArgument, hints: dict[str, Any]) -> None:
        self._single = single
        self._param_names.append(single.name)
        schema = dict(single.schema)
        if self.description is None:  # the type's docstring describes the tool
            self.description = schema.pop('description', None)
        self._define(schema, hints)

    def _define(self, schema: dict[str, Any], hints: dict[str, Any]) -> None:
        self._tool_def = ToolDefinition(
            self.name,
            schema,
            self.description,
            kind='unapproved' if self.requires_approval else 'function',
            strict=self.strict,
            defer_loading=self.defer_loading,
            metadata=self.metadata,
            sequential=self.sequential,
            return_schema=self._return_schema(hints) if self.include_return_schema else None,
            include_return_schema=self.include_return_schema,
        )

    def _return_schema(self, hints: dict[str, Any]) -> dict[str, Any] | None:
        """The JSON schema of the return annotation (property titles dropped, the type's own kept);
        None when there is nothing meaningful to say (no annotation, `None`, `Any`)."""
        import pydantic

        annotation = hints.get('return')
        if annotation is None or annotation is type(None) or annotation is Any:
            return None
        return drop_property_titles(pydantic.TypeAdapter(annotation).json_schema())  # type: ignore[no-any-return]

    @property
    def single_field_name(self) -> str | None:
        """The parameter's name when the function takes exactly one value (a lone model-like
        parameter, or one plain parameter); else None."""
        if self._tool_def is None and self._validator is None and self._single is None:
            self._build()
        if self._single is not None:
            return self._single.name
        return self._param_names[0] if len(self._param_names) == 1 else None

    def validate_args(self, args: str | dict[str, Any] | None) -> dict[str, Any]:
        """The arguments as keyword arguments for the function; raises `ToolArgsError`."""
        import pydantic

        try:
            return self.validate_args_or_raise(args)
        except pydantic.ValidationError as exc:
            raise ToolArgsError(list(exc.errors(include_url=False, include_context=False))) from None  # type: ignore[arg-type]

    def validate_args_or_raise(self, args: str | dict[str, Any] | None, *, partial: bool = False) -> dict[str, Any]:
        """`validate_args`, raising pydantic's `ValidationError` itself (an output hook's handler
        raises it, as the reference's does); `partial`: arguments still streaming."""
        if self._validator is None and self._single is None:
            self._build()
        if self._single is not None:
            return self._single.validate(args, partial=partial)
        validator = self._validator.__pydantic_validator__
        validated = (
            validator.validate_json(args or '{}', allow_partial='trailing-strings' if partial else 'off')
            if isinstance(args, str)
            else validator.validate_python(args or {}, allow_partial=partial)
        )
        return {name: getattr(validated, name) for name in self._param_names}

    async def check_args(self, ctx: RunContext[Any], args: dict[str, Any]) -> None:
        """`args_validator(ctx, **args)`, when the tool has one: it may raise `ModelRetry`."""
        if self.args_validator is None:
            return
        result = self.args_validator(ctx, **args)
        if inspect.isawaitable(result):
            await result

    async def prepared(self, ctx: RunContext[Any]) -> Tool[AgentDepsT] | None:
        """The tool as `prepare(ctx, tool_def)` shapes it for this step (None: hidden)."""
        if self.prepare is None:
            return self
        shaped = self.prepare(ctx, self.tool_def)
        if inspect.isawaitable(shaped):
            shaped = await shaped
        if shaped is None:
            return None
        if shaped is self.tool_def:
            return self
        view = copy.copy(self)
        view._tool_def = shaped
        return view

    async def call(self, ctx: RunContext[Any], args: dict[str, Any]) -> Any:
        """Run the function (a sync one in a worker thread, so it cannot block the event loop);
        past `timeout` seconds the model is told so and may try again (`ModelRetry`)."""
        if self.timeout is None:
            return await self._call(ctx, args)
        try:
            return await asyncio.wait_for(self._call(ctx, args), self.timeout)
        except TimeoutError:
            raise ModelRetry(f'Timed out after {self.timeout} seconds.') from None

    async def _call(self, ctx: RunContext[Any], args: dict[str, Any]) -> Any:
        positional = (ctx,) if self.takes_ctx else ()
        if self._is_async:
            return await self.function(*positional, **args)
        # Copy the context so context variables set around the call (StepPersistence's ledger scope)
        # are visible inside the worker thread.
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(None, functools.partial(context.run, self.function, *positional, **args))
        if inspect.isawaitable(result):
            result = await result
        return result
