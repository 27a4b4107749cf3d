"""Reading a run back after the fact: what the store knows of it, and continuing or forking it
from its latest snapshot, refused while a tool call's effect is unknown (for `StepPersistence`)."""

from __future__ import annotations

from collections.abc import Sequence

from threadline.exceptions import UnresolvedToolEffect
from threadline.storage import AsyncStore, RecoveryInspection, StoredConversation, SyncStore, ToolEffect

__all__ = ['continue_run', 'fork_run', 'inspect_recovery', 'refuse_unknown_effects']


async def inspect_recovery(store: AsyncStore[SyncStore], run_id: str, *, scope: str) -> RecoveryInspection:
    """What the store knows about `run_id` in `scope`: latest snapshot, latest settled one, and its
    tool effects, with calls still `started` reported as unknown (read-only; not permission to
    replay). A run of another scope looks exactly like one that does not exist."""
    run = await store.get_run(run_id, scope=scope)
    snapshots = await store.list_snapshots(run_id, scope=scope)
    effects = await store.tool_effects(run_id, scope=scope)
    events = await store.list_events(run_id, scope=scope)
    settled = [s for s in snapshots if s.state == 'complete']
    return RecoveryInspection(
        run_id=run_id,
        conversation_id=run.conversation_id if run else None,
        latest=snapshots[-1] if snapshots else None,
        latest_settled=settled[-1] if settled else None,
        unknown=[e for e in effects if e.status == 'started'],
        completed=[e for e in effects if e.status == 'completed'],
        failed=[e for e in effects if e.status == 'failed'],
        events=events,
    )


async def continue_run(
    store: AsyncStore[SyncStore],
    run_id: str,
    *,
    scope: str,
    include_interrupted: bool = False,
    allow_unknown_effects: bool = False,
) -> StoredConversation:
    """The conversation as of the run's latest (settled, unless `include_interrupted`) snapshot.

    Refuses (`UnresolvedToolEffect`) while the run's ledger holds a tool call whose effect is
    unknown, unless `allow_unknown_effects=True`: continuing would let the model make it again.
    """
    if not allow_unknown_effects:
        refuse_unknown_effects(run_id, await store.tool_effects(run_id, scope=scope))
    snapshots = [
        s for s in await store.list_snapshots(run_id, scope=scope) if include_interrupted or s.state == 'complete'
    ]
    if not snapshots:
        raise LookupError(f'run {run_id!r} has no {"" if include_interrupted else "settled "}snapshot')
    snap = snapshots[-1]
    stored = await store.load(snap.conversation_id, scope=scope)
    messages = await store.load_at(snap.conversation_id, scope=scope, branch_id=snap.branch_id, position=snap.position)
    messages += snap.pending  # built and not sent when the snapshot was taken: the log has not got them
    stored.messages, stored.offset, stored.length = messages, 0, len(messages)
    return stored


async def fork_run(
    store: AsyncStore[SyncStore], run_id: str, *, scope: str, include_interrupted: bool = False
) -> StoredConversation:
    """A new conversation sharing the history up to the run's latest snapshot (no copy)."""
    snapshots = [
        s for s in await store.list_snapshots(run_id, scope=scope) if include_interrupted or s.state == 'complete'
    ]
    if not snapshots:
        raise LookupError(f'run {run_id!r} has no {"" if include_interrupted else "settled "}snapshot')
    snap = snapshots[-1]
    fork_id = await store.fork(snap.conversation_id, scope=scope, at=snap.position)
    if snap.pending:  # the snapshot's unsent messages become the fork's own
        await store.append(fork_id, list(snap.pending), scope=scope)
    return await store.load(fork_id, scope=scope)


def refuse_unknown_effects(where: str, effects: Sequence[ToolEffect]) -> None:
    """Raise `UnresolvedToolEffect` naming the first tool call that started and never finished."""
    unknown = [e for e in effects if e.status == 'started']
    if not unknown:
        return
    first = unknown[0]
    key = f', idempotency key {first.idempotency_key!r}' if first.idempotency_key else ''
    raise UnresolvedToolEffect(
        f'{where}: tool call {first.tool_call_id!r} ({first.tool_name}{key}) started and never finished, so its '
        f'effect is unknown ({len(unknown)} such call(s)). Check the destination, then record what happened with '
        'threadline.audit.reconcile_tool_call(store, conversation_id, tool_call_id, scope=..., result=..., '
        'evidence=...); or pass allow_unknown_effects=True if the tool is idempotent at its destination.'
    )
