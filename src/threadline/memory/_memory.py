"""`Memory`: a Markdown notebook per namespace that outlives any one conversation.

Rules (each tested):
- The notebook is addressed by the store's `scope` and a `namespace` (a user or tenant id), both
  resolved from the run (`Memory(store, scope=..., namespace=lambda ctx: ctx.deps.user_id)`),
  never from a tool argument, so a model cannot read another user's notes. A missing or empty
  one raises `UserError` when the run starts.
- Tools: `read_memory` (the notebook or one `## section`), `write_memory` (append to a section or
  replace it; the section moves to the end), `delete_memory` (a section), `search_memory`.
- Every write is compare-and-set: it names the version the model last saw in this run (by
  reading, or in the injected excerpt). If the notebook changed since, the tool answers "the
  notebook changed; read it again" (a `ModelRetry`) and writes nothing. A retried tool call
  (same run and tool-call id) applies once: the store keeps an operation receipt.
- Injection: once per run, before its first model request, a bounded excerpt (default 2,000
  characters, the last written sections first) is added as user-role content framed in
  `<memory version="N">...</memory>`, never as a system prompt, and only when the notebook
  changed since the last excerpt this conversation shows. Framing tags inside notes are
  neutralized, so a note cannot close the frame or speak as `<system>`.

What this does not protect against: notes are model-written content. Whoever the agent talks to
can get false or hostile text written into them, and it comes back in later conversations. The
user role lowers its authority below the system prompt and the frame marks where it came from,
but that is not a hard boundary against prompt injection: treat a notebook as untrusted input.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from threadline.agent import RunContext, Tool
from threadline.agent.capability import CapabilityDepsT
from threadline.agent.tools import FunctionToolset
from threadline.capabilities import AbstractCapability, ModelRequestContext
from threadline.exceptions import ConflictError, ModelRetry, UserError
from threadline.memory._notebook import delete_section, excerpt, find_section, parse, write_section
from threadline.messages import ModelRequest, UserPromptPart
from threadline.messages.framing import neutralize
from threadline.storage import AsyncStore, SyncStore

__all__ = ['Memory']

_SHOWN = re.compile(r'^<memory version="(\d+)">')
_CHANGED = 'The notebook changed since you read it (another writer, or another run). Read it again, then write.'


@dataclass
class _RunMemory:
    scope: str
    namespace: str
    seen: int | None = None
    """The notebook version the model saw in this run (None: it has seen none)."""
    injected: bool = False


class Memory(AbstractCapability[CapabilityDepsT]):
    """Gives the agent a Markdown notebook that outlives conversations (see the module docstring)."""

    def __init__(
        self,
        store: AsyncStore[SyncStore],
        *,
        scope: str | Callable[[RunContext[CapabilityDepsT]], str],
        namespace: str | Callable[[RunContext[CapabilityDepsT]], str],
        max_excerpt: int = 2_000,
        max_chars: int = 65_536,
        inject: bool = True,
    ) -> None:
        self.store, self.scope, self.namespace = store, scope, namespace
        self.max_excerpt, self.max_chars, self.inject = max_excerpt, max_chars, inject
        self._runs: dict[str, _RunMemory] = {}
        self._toolset: FunctionToolset[CapabilityDepsT] = FunctionToolset(id='memory')
        for function in (self._read_memory, self._write_memory, self._delete_memory, self._search_memory):
            self._toolset.add_tool(Tool(function, takes_ctx=True, name=function.__name__.lstrip('_')))

    def __repr__(self) -> str:
        return 'Memory()'

    def get_toolset(self) -> FunctionToolset[CapabilityDepsT]:
        return self._toolset

    async def before_run(self, ctx: RunContext[CapabilityDepsT]) -> None:
        scope = self.scope(ctx) if callable(self.scope) else self.scope
        namespace = self.namespace(ctx) if callable(self.namespace) else self.namespace
        for name, value in (('scope', scope), ('namespace', namespace)):
            if not isinstance(value, str) or not value or not value.isprintable():
                raise UserError(
                    f'Memory {name} must resolve to a non-empty string without control characters '
                    '(from the run, not the model)'
                )
        self._runs[ctx.run_id] = _RunMemory(scope, namespace)

    async def after_run(self, ctx: RunContext[CapabilityDepsT], *, result: Any) -> Any:
        self._runs.pop(ctx.run_id, None)
        return result

    async def on_run_error(self, ctx: RunContext[CapabilityDepsT], *, error: BaseException) -> Any:
        self._runs.pop(ctx.run_id, None)
        raise error

    async def wrap_run(self, ctx: RunContext[CapabilityDepsT], *, handler: Any) -> Any:
        try:
            return await handler()
        finally:  # however the run ends, its per-run state goes
            self.forget_run(ctx)

    def forget_run(self, ctx: RunContext[CapabilityDepsT]) -> None:
        """Drop the run's per-run state (the version it saw, whether the excerpt went in)."""
        self._runs.pop(ctx.run_id, None)

    def _state(self, ctx: RunContext[CapabilityDepsT]) -> _RunMemory:
        state = self._runs.get(ctx.run_id)
        if state is None:
            raise UserError('Memory tools run only inside a run that has the Memory capability')
        return state

    async def before_model_request(
        self, ctx: RunContext[CapabilityDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        await self.inject_excerpt(ctx)
        return request_context

    async def inject_excerpt(self, ctx: RunContext[CapabilityDepsT]) -> None:
        """Before the run's first model request: enqueue the framed excerpt, if the notebook
        changed since the last one this conversation shows (the module docstring's rules)."""
        state = self._runs.get(ctx.run_id)
        if state is None or state.injected or not self.inject:
            return
        state.injected = True
        notebook = await self.store.read_notebook(state.namespace, scope=state.scope)
        if notebook is None or not notebook.content.strip() or _last_shown(ctx.messages) == notebook.version:
            return
        text = neutralize(excerpt(notebook.content, self.max_excerpt))
        note = f'<memory version="{notebook.version}">\n{text}\n</memory>'
        ctx.enqueue(UserPromptPart(note), priority='asap')
        state.seen = notebook.version

    # -- tools ------------------------------------------------------------------------------
    async def _read_memory(self, ctx: RunContext[CapabilityDepsT], section: str | None = None) -> str:
        """Read your notebook, or one section of it.

        Args:
            section: The `## heading` of the section to read; all of the notebook when omitted.
        """
        state = self._state(ctx)
        notebook = await self.store.read_notebook(state.namespace, scope=state.scope)
        state.seen = notebook.version if notebook else 0
        if notebook is None or not notebook.content.strip():
            return 'The notebook is empty.'
        if section is None:
            return notebook.content[: self.max_chars]
        found = find_section(parse(notebook.content), section)
        return found.render() if found else f'No section {section!r}. Sections: {_titles(notebook.content)}.'

    async def _write_memory(
        self,
        ctx: RunContext[CapabilityDepsT],
        section: str,
        content: str,
        mode: Literal['append', 'replace'] = 'append',
    ) -> str:
        """Write to a section of your notebook (it is created if missing).

        Args:
            section: The `## heading` of the section.
            content: The Markdown to add, or the section's new text.
            mode: `append` adds to the section; `replace` replaces what it holds.
        """
        state = self._state(ctx)
        if not section.strip():
            raise ModelRetry('Name the section to write (its heading).')
        notebook = await self.store.read_notebook(state.namespace, scope=state.scope)
        current = notebook.version if notebook else 0
        if state.seen is not None and state.seen != current:
            raise ModelRetry(_CHANGED)
        updated = write_section(notebook.content if notebook else '', section, content, replace=mode == 'replace')
        if len(updated) > self.max_chars:
            raise ModelRetry(f'The notebook would exceed {self.max_chars} characters: shorten a section first.')
        written = await self._write(ctx, state, updated, current)
        return f'Saved section {section!r} (notebook version {written}).'

    async def _delete_memory(self, ctx: RunContext[CapabilityDepsT], section: str) -> str:
        """Delete a section of your notebook.

        Args:
            section: The `## heading` of the section to delete.
        """
        state = self._state(ctx)
        notebook = await self.store.read_notebook(state.namespace, scope=state.scope)
        current = notebook.version if notebook else 0
        if state.seen is not None and state.seen != current:
            raise ModelRetry(_CHANGED)
        updated, found = delete_section(notebook.content if notebook else '', section)
        if not found:
            return f'No section {section!r} to delete.'
        written = await self._write(ctx, state, updated, current)
        return f'Deleted section {section!r} (notebook version {written}).'

    async def _search_memory(self, ctx: RunContext[CapabilityDepsT], query: str) -> str:
        """Find the sections of your notebook that mention every word of the query.

        Args:
            query: Words to look for (case is ignored).
        """
        state = self._state(ctx)
        words = [w for w in re.findall(r'\w+', query.lower())]
        if not words:
            raise ModelRetry('The query has no words to search for.')
        notebook = await self.store.read_notebook(state.namespace, scope=state.scope)
        sections = parse(notebook.content) if notebook else []
        hits = [s for s in sections if all(w in (s.title + ' ' + s.body).lower() for w in words)]
        if not hits:
            return f'No section mentions {query!r}.'
        return '\n'.join(s.render() for s in hits)[: self.max_chars]

    async def _write(self, ctx: RunContext[CapabilityDepsT], state: _RunMemory, content: str, expected: int) -> int:
        operation = f'{ctx.run_id}:{ctx.tool_call_id}'
        try:
            written = await self.store.write_notebook(
                state.namespace, content, scope=state.scope, expected_version=expected, operation_id=operation
            )
        except ConflictError:
            raise ModelRetry(_CHANGED) from None
        state.seen = written.version
        return written.version


def _last_shown(messages: list[Any]) -> int | None:
    """The version of the last notebook excerpt this conversation shows (None: none)."""
    for message in reversed(messages):
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                match = _SHOWN.match(part.content)
                if match:
                    return int(match.group(1))
    return None


def _titles(content: str) -> str:
    titles = [s.title for s in parse(content) if s.title]
    return ', '.join(repr(t) for t in titles) or 'none'
