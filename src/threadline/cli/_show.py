"""How `threadline conversations show` prints a conversation.

Rules (each tested):
- By default every part is shown whole: a dim heading (position, message kind, part kind), then
  its text wrapped at the terminal's width; a model's text is rendered as Markdown (as `rich`
  renders it), everything else as plain text. Nothing a message holds is read as markup.
- `--short`: one line per part, cut to the terminal's width with "…" where it was cut.
- A conversation longer than the screen goes through the pager at a terminal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import click
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.markdown import Markdown
from rich.segment import Segment, Segments
from rich.text import Text

__all__ = ['first_code_block', 'last_response_text', 'print_conversation']

_INDENT = 7  # the width of a heading's position column


def print_conversation(console: Console, stored: Any, *, short: bool) -> None:
    """`stored` (a `StoredConversation`) on `console`, whole or `short` (see the module docstring)."""
    header = Text(
        f'{stored.conversation_id}  revision {stored.revision}  {stored.length} messages'
        + (f'  forked from {stored.forked_from} at {stored.shared_prefix}' if stored.forked_from else '')
    )
    parts = [
        (position, message, part)
        for position, message in enumerate(stored.messages, start=stored.offset)
        for part in message.parts
    ]
    body: list[RenderableType] = [_line(console, *item) if short else _whole(*item) for item in parts]
    everything = Group(header, *body)
    if not console.is_terminal:
        console.print(everything, soft_wrap=False)
        return
    # Rendered once: the lines both decide whether a pager is needed and are what it shows.
    lines = console.render_lines(everything, console.options, pad=False)
    rendered = Segments([segment for line in lines for segment in (*line, Segment.line())])
    if len(lines) > console.height:
        with console.pager(styles=True):
            console.print(rendered, soft_wrap=False)
        return
    console.print(rendered, soft_wrap=False)


def _heading(position: int, message: Any, part: Any) -> str:
    return f'  {position:>4} {message.kind:<8} {part.part_kind:<14}'


def _line(console: Console, position: int, message: Any, part: Any) -> Text:
    line = f'{_heading(position, message, part)} {_summary(part)}'.replace('\n', ' ')
    text = Text(line, no_wrap=True, overflow='ellipsis')
    text.truncate(console.width, overflow='ellipsis')
    return text


def _whole(position: int, message: Any, part: Any) -> RenderableType:
    heading = Text(_heading(position, message, part).rstrip(), style='dim')
    content = _content(part)
    body: RenderableType = Markdown(content) if part.part_kind == 'text' else Text(content)
    return Group(heading, _Indented(body, _INDENT))


class _Indented:
    """`body` wrapped `indent` columns narrower and shifted right, without the trailing spaces
    `rich` pads lines with (so a pipe or a copy gets clean lines)."""

    def __init__(self, body: RenderableType, indent: int) -> None:
        self.body, self.indent = body, indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(options.max_width - self.indent, 20)
        for line in console.render_lines(self.body, options.update_width(width), pad=False):
            while line and not line[-1].text.strip():
                line.pop()
            if line:
                last = line[-1]
                line[-1] = Segment(last.text.rstrip(), last.style, last.control)
                yield Segment(' ' * self.indent)
                yield from line
            yield Segment.line()


def _content(part: Any) -> str:
    """A part's whole text: a call with its arguments, a result with its outcome."""
    if part.part_kind in ('tool-call', 'builtin-tool-call'):
        return f'{part.tool_name}({part.args_as_json_str()})'
    if part.part_kind in ('tool-return', 'builtin-tool-return'):
        return f'{part.tool_name} [{part.outcome}]\n{_text(part.content)}'
    return _text(getattr(part, 'content', ''))


def _summary(part: Any) -> str:
    if part.part_kind in ('tool-return', 'builtin-tool-return'):
        return f'{part.tool_name} -> {_text(part.content)} [{part.outcome}]'
    return _content(part)


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # a prompt with files: its text, and what each file is
        return '\n'.join(item if isinstance(item, str) else _file(item) for item in content)
    try:
        return json.dumps(content, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(content)


def _file(item: Any) -> str:
    kind = getattr(item, 'kind', type(item).__name__)
    where = getattr(item, 'url', None) or getattr(item, 'media_type', '')
    return f'[{kind}: {where}]'


def last_response_text(messages: Sequence[Any]) -> str:
    """The text of the conversation's last response (`show -r`)."""
    for message in reversed(messages):
        if message.kind == 'response':
            return '\n'.join(p.content for p in message.parts if p.part_kind == 'text')
    raise click.ClickException('the conversation has no response yet')


def first_code_block(text: str) -> str:
    """The first fenced code block (``` or ~~~), without its fences; the text itself when it has none."""
    found = re.search(r'^(```|~~~)[^\n]*\n(.*?)^\1\s*$', text, re.MULTILINE | re.DOTALL)
    return found.group(2).rstrip('\n') if found else text
