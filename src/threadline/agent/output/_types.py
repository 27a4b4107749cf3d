"""Output modes: how a structured output reaches the model, as markers around an output type.

    Agent(model, output_type=ToolOutput(City, name='give_city'))      # an output tool (the default)
    Agent(model, output_type=NativeOutput([City, Country]))           # the provider's JSON-schema mode
    Agent(model, output_type=PromptedOutput(City))                    # the schema in the instructions
    Agent(model, output_type=TextOutput(str.upper))                   # text, through a function

An output may also be a function: its parameters are what the model fills in (as for a tool),
and its return value is the output. The names, descriptions and schemas the model sees are
pydantic-ai 2.62's (checked against it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from threadline.exceptions import UserError

__all__ = ['NativeOutput', 'PromptedOutput', 'TextOutput', 'ToolOutput']


@dataclass(init=False)
class ToolOutput:
    """An output type (or function) offered as an output tool, with its own name, description,
    retry limit and strict mode."""

    output: Any
    name: str | None
    description: str | None
    max_retries: int | None
    strict: bool | None

    def __init__(
        self,
        type_: Any,
        *,
        name: str | None = None,
        description: str | None = None,
        max_retries: int | None = None,
        strict: bool | None = None,
    ) -> None:
        if max_retries is not None and max_retries < 0:
            raise UserError(f'max_retries must be >= 0, got {max_retries!r}')
        self.output, self.name, self.description = type_, name, description
        self.max_retries, self.strict = max_retries, strict


@dataclass(init=False)
class NativeOutput:
    """Outputs the model returns as JSON text in the provider's structured-output mode (OpenAI's
    `json_schema` response format, Anthropic's output format, Gemini's response schema). A model
    without that mode refuses the request with a `UserError`."""

    outputs: Sequence[Any]
    name: str | None
    description: str | None
    strict: bool | None

    def __init__(
        self, outputs: Any, *, name: str | None = None, description: str | None = None, strict: bool | None = None
    ) -> None:
        self.outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        self.name, self.description, self.strict = name, description, strict


@dataclass(init=False)
class PromptedOutput:
    """Outputs the model returns as JSON text because the instructions ask for it (with the
    schema); works with any model. `template` replaces the request (`{schema}` marks the schema);
    False leaves the instructions alone."""

    outputs: Sequence[Any]
    name: str | None
    description: str | None
    template: str | Literal[False] | None

    def __init__(
        self,
        outputs: Any,
        *,
        name: str | None = None,
        description: str | None = None,
        template: str | Literal[False] | None = None,
    ) -> None:
        self.outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        self.name, self.description, self.template = name, description, template


@dataclass
class TextOutput:
    """Plain text, turned into the output by `output_function(text)` (or `(ctx, text)`); it may
    raise `ModelRetry` to ask the model again."""

    output_function: Callable[..., Any]
