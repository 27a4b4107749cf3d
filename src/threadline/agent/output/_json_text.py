"""Structured output as JSON text (native and prompted output): the instructions that ask for
it, and reading an answer that may come fenced in Markdown or cut short by a stream."""

from __future__ import annotations

import json
import re
from typing import Any

from threadline.models import OutputObjectDefinition

__all__ = [
    'PROMPTED_TEMPLATE',
    'model_prompted_instructions',
    'partial_json',
    'prompted_instructions',
    'without_fences',
]

PROMPTED_TEMPLATE = (
    "Always respond with a JSON object that's compatible with this schema:\n\n{schema}\n\n"
    "Don't include any text or Markdown fencing before or after."
)


_FENCED = re.compile(r'```(?:\w+)?\r?\n(\{.*?\})\s*(?:\r?\n?```|\Z)', flags=re.DOTALL)


def without_fences(text: str) -> str:
    """A JSON object a model wrapped in a Markdown code fence, unfenced (text that starts with `{`
    is taken as it is)."""
    if text.startswith('{'):
        return text
    match = _FENCED.search(text)
    return match.group(1) if match else text


def prompted_instructions(output_object: OutputObjectDefinition, template: str | None) -> str:
    """The instructions that ask for `output_object` as JSON text (prompted output)."""
    schema = output_object.json_schema
    shown = {**schema, **({'description': output_object.description} if output_object.description else {})}
    return (template or PROMPTED_TEMPLATE).replace('{schema}', json.dumps(shown))


def model_prompted_instructions(output_object: OutputObjectDefinition) -> str:
    """The instructions a model that chose prompted output adds, as pydantic-ai 2.62's model
    writes them: its profile's template, unstripped, around the schema titled with the name."""
    schema = {k: v for k, v in output_object.json_schema.items() if k != 'title'}
    if output_object.name:
        schema['title'] = output_object.name
    if output_object.description:
        schema['description'] = output_object.description
    return '\n' + PROMPTED_TEMPLATE.replace('{schema}', json.dumps(schema)) + '\n'


def partial_json(text: str) -> Any:
    """JSON that may be cut short (a streaming answer): what has arrived, as a value."""
    import pydantic_core

    return pydantic_core.from_json(without_fences(text), allow_partial='trailing-strings')
