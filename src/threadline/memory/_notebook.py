"""A notebook's Markdown, as sections: what the Memory tools read and change.

A section is a `## heading` line and the lines under it, up to the next `## heading`. Text before
the first heading is the preamble (section `''`). A section that is written moves to the end, so
the notebook reads oldest first and an excerpt taken from the end holds what changed last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ['Section', 'delete_section', 'excerpt', 'find_section', 'parse', 'render', 'write_section']

_HEADING = re.compile(r'^##\s+(.*?)\s*$')


@dataclass(frozen=True)
class Section:
    title: str
    body: str

    def render(self) -> str:
        body = self.body.rstrip('\n')
        if not self.title:
            return body + '\n' if body else ''
        return f'## {self.title}\n{body}\n' if body else f'## {self.title}\n'


def parse(content: str) -> list[Section]:
    sections: list[Section] = []
    title, lines = '', list[str]()
    for line in content.splitlines():
        match = _HEADING.match(line)
        if match:
            if title or any(x.strip() for x in lines):
                sections.append(Section(title, '\n'.join(lines).strip('\n')))
            title, lines = match.group(1), []
        else:
            lines.append(line)
    if title or any(x.strip() for x in lines):
        sections.append(Section(title, '\n'.join(lines).strip('\n')))
    return sections


def render(sections: list[Section]) -> str:
    return '\n'.join(s.render() for s in sections if s.render())


def find_section(sections: list[Section], title: str) -> Section | None:
    wanted = title.strip().lower()
    return next((s for s in sections if s.title.lower() == wanted), None)


def write_section(content: str, title: str, text: str, *, replace: bool) -> str:
    """`content` with section `title` appended to (or replaced by `text`), moved to the end."""
    sections = parse(content)
    current = find_section(sections, title)
    kept = [s for s in sections if s is not current]
    body = (
        text.strip('\n') if replace or current is None or not current.body else current.body + '\n' + text.strip('\n')
    )
    return render([*kept, Section(current.title if current else title.strip(), body)])


def delete_section(content: str, title: str) -> tuple[str, bool]:
    sections = parse(content)
    current = find_section(sections, title)
    return render([s for s in sections if s is not current]), current is not None


def excerpt(content: str, limit: int) -> str:
    """At most `limit` characters of whole sections, the last written first; a section too long
    for what is left is cut, with a marker saying so."""
    chosen: list[str] = []
    left = limit
    for section in reversed(parse(content)):
        text = section.render()
        if len(text) <= left:
            chosen.append(text)
            left -= len(text) + 1
        else:
            if left > 80:
                chosen.append(text[: left - 40].rstrip() + '\n[... cut; read_memory shows all]\n')
            break
    return '\n'.join(chosen)
