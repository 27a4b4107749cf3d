"""Reading a pydantic-ai run back from a Threadline store, under the names the harness uses.

`continue_run` and `fork_run` return the conversation as of the run's latest snapshot as a
`PydanticAIHistory` (pydantic-ai messages, the usage, the conversation id: `**history.run_kwargs()`
continues it), where the harness returns the messages alone; `latest_snapshot` and
`list_unresolved_tool_effects` answer what the harness's store methods of those names answer, as
Threadline records (`Snapshot`, `ToolEffect`). Every one takes the `scope`: a run of another
scope is not found.
"""

from __future__ import annotations

from threadline.pydantic_ai._history import PydanticAIHistory, converted
from threadline.steps import continue_run as continue_stored_run
from threadline.steps import fork_run as fork_stored_run
from threadline.storage import AsyncStore, Snapshot, SyncStore, ToolEffect

__all__ = ['continue_run', 'fork_run', 'latest_snapshot', 'list_unresolved_tool_effects']


async def continue_run(
    store: AsyncStore[SyncStore],
    run_id: str,
    *,
    scope: str,
    include_interrupted: bool = False,
    allow_unknown_effects: bool = False,
) -> PydanticAIHistory:
    """The run's conversation as of its latest settled snapshot (any, with `include_interrupted`);
    refused with `UnresolvedToolEffect` while a call of the run has an unknown effect, unless
    `allow_unknown_effects`: continuing would let the model make the call again."""
    stored = await continue_stored_run(
        store, run_id, scope=scope, include_interrupted=include_interrupted, allow_unknown_effects=allow_unknown_effects
    )
    return converted(stored)


async def fork_run(
    store: AsyncStore[SyncStore], run_id: str, *, scope: str, include_interrupted: bool = False
) -> PydanticAIHistory:
    """A new conversation sharing the run's history up to its latest snapshot (nothing copied)."""
    return converted(await fork_stored_run(store, run_id, scope=scope, include_interrupted=include_interrupted))


async def latest_snapshot(
    store: AsyncStore[SyncStore], run_id: str, *, scope: str, include_interrupted: bool = False
) -> Snapshot | None:
    """The run's newest settled snapshot (any, with `include_interrupted`), or None."""
    snapshots = await store.list_snapshots(run_id, scope=scope)
    kept = [s for s in snapshots if include_interrupted or s.state == 'complete']
    return kept[-1] if kept else None


async def list_unresolved_tool_effects(store: AsyncStore[SyncStore], run_id: str, *, scope: str) -> list[ToolEffect]:
    """The run's tool calls that started and never finished: their effect is unknown."""
    return [e for e in await store.tool_effects(run_id, scope=scope) if e.status == 'started']
