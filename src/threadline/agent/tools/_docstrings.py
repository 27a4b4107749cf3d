"""A tool's description and its parameters' descriptions, read from its docstring by `griffe`, in
Google, NumPy or Sphinx style (as pydantic-ai 2.62 reads them, so a ported tool keeps them).

Rules (each checked against pydantic-ai over the same docstrings):
- `style='auto'` infers the style from the docstring's section markers; a docstring with none is
  all description;
- the description is the docstring's leading text; text after the first section, and examples,
  notes, raises and the like, are not part of it;
- a `Returns` section is kept beside it: `<summary>…</summary>` then `<returns>` holding the
  return's `<type>` (when the docstring names one) and `<description>`;
- a parameter's description keeps its line breaks; parameters the signature does not have are
  ignored (the schema is the signature's).
"""

from __future__ import annotations

import inspect
from typing import Any, Literal

__all__ = ['DocstringStyle', 'parse_docstring']

DocstringStyle = Literal['google', 'numpy', 'sphinx', 'auto']


def parse_docstring(doc: str | None, style: DocstringStyle = 'auto') -> tuple[str | None, dict[str, str]]:
    """(description, {parameter: description}) of a tool's docstring (see the module docstring)."""
    if not doc or not doc.strip():
        return None, {}
    import griffe  # imported when the first tool with a docstring is made

    text = inspect.cleandoc(doc)
    docstring = griffe.Docstring(text, lineno=1)
    parser = griffe.Parser(style) if style != 'auto' else griffe.infer_docstring_style(docstring)[0]
    if parser is None:
        return text, {}
    # No signature is attached, so griffe would warn about every parameter: the schema is the
    # signature's, and those lines would say nothing to a user.
    # Google's `Returns:` reads `str: The forecast.` as a type and its description, not a name.
    options = {'returns_named_value': False} if parser is griffe.Parser.google else {}
    sections = griffe.parse(docstring, parser, warnings=False, **options)
    params: dict[str, str] = {}
    leading: str | None = None
    returns: Any = None
    for index, section in enumerate(sections):
        kind = section.kind.value
        if kind == 'text' and index == 0:
            leading = section.value
        elif kind == 'parameters':
            params.update((p.name, p.description) for p in section.value if p.description)
        elif kind == 'returns' and section.value:
            returns = section.value[0]
    if leading is None and returns is not None:
        return text, params  # no description to sum up: the docstring as written
    return _with_returns(leading, returns), params


def _with_returns(description: str | None, returns: Any) -> str | None:
    if returns is None or description is None:
        return description
    lines = ['<returns>']
    if returns.annotation:
        lines.append(f'<type>{returns.annotation}</type>')
    lines.append(f'<description>{returns.description}</description>')
    lines.append('</returns>')
    return f'<summary>{description}</summary>\n' + '\n'.join(lines)
