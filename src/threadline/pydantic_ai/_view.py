"""A pydantic-ai run as Threadline code sees it: a Threadline `RunContext` kept in step with it.

Threadline's capabilities (step persistence, search, memory) are written against Threadline's
`RunContext`. A pydantic-ai capability of this package keeps one `RunView` per run and hands
that code `view.context`, whose history is the run's, converted by the bridge.

Rules (each tested in `tests/pydantic_ai/`):
- Converted incrementally, by identity: while the run's list only grows (its first and last
  converted messages are the same objects, the check the step log itself makes), a hook converts
  only what was added since the last one, so its cost does not grow with the history; a list a
  processor replaced is walked again, converting only objects not seen before. A converted
  message is the same object at every later hook.
- Across runs too: `CONVERTED` maps each pydantic-ai message object converted (or handed out by
  `load_history`) to its Threadline message for as long as the object lives, and pydantic-ai
  passes `message_history` on as the same objects, so a run continuing the last one converts
  only its own turn. The rule this relies on is pydantic-ai's and Threadline's both: replace a
  message to change it, never mutate it in place (an edit in place is not seen again).
- pydantic-ai hands its run-level hooks (`before_run`, `after_run`, `on_run_error`) a context
  whose history is empty: an empty list leaves the view's history as the last step hook saw it.
- `enqueue` on the view enqueues into the pydantic-ai run (parts and messages converted).
- The view's `metadata[THEIR_CONTEXT]` is pydantic-ai's context of the current hook, so a `scope`
  or `namespace` function receives pydantic-ai's `RunContext`, as its user wrote it.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from threadline.agent import RunContext
from threadline.exceptions import UserError
from threadline.messages import ModelMessage, ModelRequest, ModelResponse, RunUsage
from threadline.models.function import AgentInfo, FunctionModel
from threadline.pydantic_ai._bridge import from_pydantic_ai, to_pydantic_ai

if TYPE_CHECKING:
    from pydantic_ai import RunContext as TheirContext
    from pydantic_ai.messages import ModelMessage as TheirMessage
    from pydantic_ai.usage import RunUsage as TheirUsage

__all__ = ['CONVERTED', 'THEIR_CONTEXT', 'RunView', 'RunViews', 'run_ids']

THEIR_CONTEXT = 'pydantic_ai_context'


def _not_a_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    raise UserError("the view of a pydantic-ai run has no Threadline model: its requests are pydantic-ai's")


_NO_MODEL = FunctionModel(_not_a_model)


def run_ids(ctx: TheirContext[object]) -> tuple[str, str]:
    """The run's ids: pydantic-ai gives every run both (a hand-built context may lack them)."""
    if not ctx.run_id or not ctx.conversation_id:
        raise UserError(
            'a Threadline capability needs a run with a run_id and a conversation_id (pydantic-ai sets both)'
        )
    return ctx.run_id, ctx.conversation_id


class _Converted:
    """pydantic-ai message objects and the Threadline messages they were converted to, by
    identity, each pair kept while the pydantic-ai object lives; and the converted lists, by
    their last message, so a run over a history an earlier run ended with starts from it."""

    _LOOK_BACK = 8  # a run's list is an earlier run's history plus its own few new messages

    def __init__(self) -> None:
        self._pairs: dict[int, tuple[weakref.ref[TheirMessage], ModelMessage]] = {}
        self._lists: dict[
            int, tuple[weakref.ref[TheirMessage], weakref.ref[TheirMessage], list[ModelMessage], int]
        ] = {}

    def get(self, theirs: TheirMessage) -> ModelMessage | None:
        hit = self._pairs.get(id(theirs))
        return hit[1] if hit is not None and hit[0]() is theirs else None

    def put(self, theirs: TheirMessage, ours: ModelMessage) -> None:
        self._pairs[id(theirs)] = (self._ref(theirs, self._pairs.pop), ours)

    def put_all(self, theirs: Sequence[TheirMessage], ours: Sequence[ModelMessage]) -> None:
        """`theirs[i]` is `ours[i]` converted (a history just converted the other way)."""
        for one, other in zip(theirs, ours, strict=True):
            self.put(one, other)
        self.remember(list(theirs), list(ours))  # and as a whole: a run over it need not walk it

    @staticmethod
    def _ref(theirs: TheirMessage, drop: Callable[[int, None], object]) -> weakref.ref[TheirMessage]:
        key = id(theirs)

        def forget(_: object) -> None:
            # Called as the object dies, which is before its id can be given to another object.
            drop(key, None)

        return weakref.ref(theirs, forget)

    def convert(self, messages: list[TheirMessage]) -> list[ModelMessage]:
        """`messages` as Threadline messages, converting only the objects not converted before,
        and not walking a prefix that an earlier conversion ended with."""
        start, out = self._known_prefix(messages)
        rest = messages[start:]
        found = [self.get(m) for m in rest]
        fresh = [m for m, hit in zip(rest, found, strict=True) if hit is None]
        converted = iter(from_pydantic_ai(fresh) if fresh else ())
        for message, hit in zip(rest, found, strict=True):
            if hit is None:
                hit = next(converted)
                self.put(message, hit)
            out.append(hit)
        self.remember(messages, out)
        return out

    def remember(self, messages: list[TheirMessage], ours: list[ModelMessage]) -> None:
        """`ours` is `messages` converted (its first `len(messages)` items stay as they are)."""
        if messages:
            last = messages[-1]
            self._lists[id(last)] = (self._ref(last, self._lists.pop), weakref.ref(messages[0]), ours, len(messages))

    def _known_prefix(self, messages: list[TheirMessage]) -> tuple[int, list[ModelMessage]]:
        for end in range(len(messages), max(0, len(messages) - self._LOOK_BACK), -1):
            hit = self._lists.get(id(messages[end - 1]))
            if hit is not None and hit[0]() is messages[end - 1] and hit[1]() is messages[0] and hit[3] == end:
                return end, hit[2][:end]
        return 0, []


CONVERTED = _Converted()


class _Queue:
    """`RunContext.enqueue` of the view: into the pydantic-ai run, converted."""

    def __init__(self, view: RunView) -> None:
        self.view = view

    def put(self, items: tuple[object, ...], *, priority: str, tool_call_id: str | None) -> str | None:
        converted = [_theirs(item) for item in items]
        result = self.view.their.enqueue(*converted, priority=priority)  # type: ignore[arg-type]
        return result if isinstance(result, str) else None


def _theirs(item: object) -> object:
    if isinstance(item, ModelRequest | ModelResponse):
        return to_pydantic_ai([item])[0]
    if isinstance(item, str) or not hasattr(item, 'part_kind'):
        return item
    wrapped = to_pydantic_ai([ModelRequest(parts=[item])])[0]  # type: ignore[list-item]
    return wrapped.parts[0]


@dataclass
class RunView:
    """One pydantic-ai run, and the Threadline `RunContext` that stands for it."""

    their: TheirContext[object]
    start_usage: TheirUsage
    context: RunContext[object] = field(init=False)
    source: list[TheirMessage] | None = None  # the pydantic-ai list converted last, and how much of it
    converted: int = 0
    flags: set[str] = field(default_factory=set)  # what a capability noted about this run

    def __post_init__(self) -> None:
        run_id, conversation_id = run_ids(self.their)
        self.context = RunContext(
            deps=self.their.deps,
            model=_NO_MODEL,
            usage=RunUsage(),
            run_id=run_id,
            conversation_id=conversation_id,
            queue=_Queue(self),
        )

    @classmethod
    def of(cls, ctx: TheirContext[object]) -> RunView:
        """A new view of the run `ctx` belongs to (its usage as the run starts is kept)."""
        return cls(ctx, copy.deepcopy(ctx.usage))

    def sync(self, ctx: TheirContext[object], messages: list[TheirMessage] | None = None) -> RunContext[object]:
        """The view with `messages` (default: the context's) as its history (rules above)."""
        messages = ctx.messages if messages is None else messages
        view = self.context
        if messages or self.source is None:
            if self._grown(messages):
                view.messages.extend(self._convert(messages[self.converted :]))
            else:  # a new list (a processor replaced it): walk it, converting only what is new
                view.messages = self._convert(messages)
            self.source, self.converted = messages, len(messages)
        self.their = ctx
        view.run_step = ctx.run_step
        view.tool_call_id, view.tool_name, view.retry = ctx.tool_call_id, ctx.tool_name, ctx.retry
        view.metadata[THEIR_CONTEXT] = ctx
        return view

    def _grown(self, messages: list[TheirMessage]) -> bool:
        if self.source is None or len(messages) < self.converted:
            return False
        if not self.converted:
            return True
        return messages[0] is self.source[0] and messages[self.converted - 1] is self.source[self.converted - 1]

    def _convert(self, messages: list[TheirMessage]) -> list[ModelMessage]:
        return CONVERTED.convert(messages)


class RunViews(dict[str, RunView]):
    """A capability's views, one per run it is part of (by run id)."""

    def sync(self, ctx: TheirContext[object]) -> RunContext[object]:
        """The view of `ctx`'s run (made at its first hook), in step with `ctx`."""
        run_id = run_ids(ctx)[0]
        view = self.get(run_id)
        if view is None:
            view = self[run_id] = RunView.of(ctx)
        return view.sync(ctx)

    def of(self, ctx: TheirContext[object]) -> RunView:
        return self[run_ids(ctx)[0]]

    def drop(self, ctx: TheirContext[object]) -> RunView | None:
        return self.pop(run_ids(ctx)[0], None)
