"""`ConversationSearch`: one tool the model calls to pull earlier turns back into its context.

Rules (each tested):
- Where it looks is the server's decision, never the model's: the scope comes from the
  capability's `scope` (a string, or a function of the `RunContext`), the conversation from the
  run. `reach='conversation'` (the default) searches the run's own conversation, every branch of
  it, so turns a history processor or compaction dropped from what the model sees are found;
  `reach='scope'` searches every conversation of the scope and never beyond it.
- The query syntax is the store's (`threadline.storage.index._query`): words, "phrases", prefix*; any
  other character is a separator, never search-engine syntax. An empty query is a tool error
  the model can act on (`ModelRetry`).
- Filters: a run id, a time window (`since`, `until`, ISO 8601) and roles (user, assistant,
  tool). A run id of another conversation or scope simply matches nothing.
- Each hit names its conversation, position, role, time and run, with a snippet where the
  matches are marked `[...]`. The run's own messages are left out (the model has them, and its
  question would rank first), and a message kept on several branches (a compaction rewrote the
  history after it) is shown once. System prompts are not indexed. The whole answer is at most `max_chars` characters (default
  4,000), so recall cannot flood the context; what did not fit is counted, not shown.
- Ranking is the store's: BM25 over the conversation's own statistics when scoped to one
  conversation (SQLite), FTS5 bm25 or `ts_rank` store-wide.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Literal

from threadline.agent import RunContext, Tool
from threadline.agent.capability import CapabilityDepsT
from threadline.agent.tools import FunctionToolset
from threadline.capabilities import AbstractCapability
from threadline.exceptions import ConversationNotFound, ModelRetry, SearchQueryTooLarge, UserError
from threadline.storage import AsyncStore, SearchHit, SyncStore
from threadline.storage.index import parse_query

__all__ = ['ConversationSearch']

Role = Literal['user', 'assistant', 'tool']
_MAX_FETCH = 400


class ConversationSearch(AbstractCapability[CapabilityDepsT]):
    """Gives the model a tool (`tool_name`, default `search_conversation`) that searches stored
    history: the run's conversation (`reach='conversation'`) or its whole scope (`reach='scope'`).
    See the module docstring for the rules."""

    def __init__(
        self,
        store: AsyncStore[SyncStore],
        *,
        scope: str | Callable[[RunContext[CapabilityDepsT]], str],
        reach: Literal['conversation', 'scope'] = 'conversation',
        tool_name: str = 'search_conversation',
        max_hits: int = 10,
        max_chars: int = 4_000,
    ) -> None:
        if reach not in ('conversation', 'scope'):
            raise UserError(f"reach must be 'conversation' or 'scope', not {reach!r}")
        if max_hits < 1 or max_chars < 200:
            raise UserError('ConversationSearch needs max_hits >= 1 and max_chars >= 200')
        self.store, self.scope, self.reach = store, scope, reach
        self.max_hits, self.max_chars = max_hits, max_chars
        self._toolset: FunctionToolset[CapabilityDepsT] = FunctionToolset(id='conversation-search')
        description = _DESCRIPTION + (_CONVERSATION_NOTE if reach == 'conversation' else _SCOPE_NOTE)
        self._toolset.add_tool(Tool(self._search, takes_ctx=True, name=tool_name, description=description))

    def __repr__(self) -> str:
        return f'ConversationSearch(reach={self.reach!r})'

    def get_toolset(self) -> FunctionToolset[CapabilityDepsT]:
        return self._toolset

    def _scope_for(self, ctx: RunContext[CapabilityDepsT]) -> str:
        scope = self.scope(ctx) if callable(self.scope) else self.scope
        if not isinstance(scope, str) or not scope:
            raise UserError('ConversationSearch scope must resolve to a non-empty string')
        return scope

    async def _search(
        self,
        ctx: RunContext[CapabilityDepsT],
        query: str,
        run_id: str | None = None,
        roles: list[Role] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> str:
        """Search the stored conversation history.

        Args:
            query: Words to find (all must match), a "quoted phrase", or a prefix such as refun*.
            run_id: Only messages written by this run.
            roles: Only these speakers: user, assistant, tool.
            since: Only messages at or after this time (ISO 8601).
            until: Only messages before this time (ISO 8601).
        """
        try:
            terms = parse_query(query)
        except SearchQueryTooLarge as exc:
            raise ModelRetry(f'{exc}. Search for fewer, shorter words.') from None
        if not terms:
            raise ModelRetry(
                'The query has no words to search for. Give one or more words, a "quoted phrase", or a '
                'prefix such as refun*.'
            )
        scope = self._scope_for(ctx)
        conversation = ctx.conversation_id if self.reach == 'conversation' else None
        try:
            hits = await self._filtered(
                query, scope, conversation, run_id, set(roles or ()), since, until, current=ctx.run_id
            )
        except ConversationNotFound:
            return 'Nothing is stored for this conversation yet.'
        except SearchQueryTooLarge as exc:
            raise ModelRetry(f'{exc}. Search for fewer, rarer words.') from None
        return self._answer(query, hits)

    async def _filtered(
        self,
        query: str,
        scope: str,
        conversation: str | None,
        run_id: str | None,
        roles: set[str],
        since: datetime | None,
        until: datetime | None,
        *,
        current: str | None,
    ) -> list[SearchHit]:
        """Hits that pass the filters, each message once: fetched in growing batches while too few pass."""
        shown: set[tuple[object, ...]] = set()

        def keep(hit: SearchHit) -> bool:
            same = (hit.conversation_id, hit.role, hit.timestamp, hit.snippet)  # one message on two branches
            if same in shown or (current is not None and hit.run_id == current):
                return False
            shown.add(same)
            return (
                (run_id is None or hit.run_id == run_id)
                and (not roles or hit.role in roles)
                and (since is None or (hit.timestamp is not None and hit.timestamp >= since))
                and (until is None or (hit.timestamp is not None and hit.timestamp < until))
            )

        fetch = self.max_hits * (1 if run_id is None and not roles and since is None and until is None else 4)
        while True:
            found = await self.store.search(
                query, scope=scope, conversation_id=conversation, limit=fetch, include_dropped=conversation is not None
            )
            shown.clear()
            kept = [h for h in found if keep(h)]
            if len(kept) >= self.max_hits or len(found) < fetch or fetch >= _MAX_FETCH:
                return kept[: self.max_hits]
            fetch *= 4

    def _answer(self, query: str, hits: list[SearchHit]) -> str:
        where = 'this conversation' if self.reach == 'conversation' else 'this workspace'
        if not hits:
            return f'No stored message in {where} matches {query!r}.'
        lines = [f'{len(hits)} match(es) for {query!r} in {where}, best first:']
        shown = 0
        for index, hit in enumerate(hits, 1):
            block = _block(index, hit)
            if len('\n'.join([*lines, block])) > self.max_chars - 80:
                break
            lines.append(block)
            shown += 1
        if shown < len(hits):
            lines.append(f'({len(hits) - shown} more not shown: the answer is limited; narrow the query.)')
        return '\n'.join(lines)


def _block(index: int, hit: SearchHit) -> str:
    when = hit.timestamp.isoformat().replace('+00:00', 'Z') if hit.timestamp else 'unknown time'
    head = f'[{index}] conversation {hit.conversation_id} · message {hit.position} · {hit.role or "?"} · {when}'
    if hit.run_id:
        head += f' · run {hit.run_id}'
    snippet = ' '.join(hit.snippet.split())
    return f'{head}\n    {snippet[:600]}'


_DESCRIPTION = (
    'Search stored history for earlier messages: details that are no longer in your context, '
    'including turns that were summarized or dropped to save space. Use it when the conversation or '
    'a summary mentions something you need the exact words of. Query syntax: words (all must match), '
    '"a quoted phrase", or a prefix such as refun*.'
)
_CONVERSATION_NOTE = ' It searches this conversation only; other conversations are out of reach.'
_SCOPE_NOTE = " It searches every conversation of this user's workspace."
