"""What a run does to the history it is given, before its first request: repair it once (and
prepare it, so later requests check and render only what is new), and render dynamic system
prompts again."""

from __future__ import annotations

from dataclasses import replace

from threadline.agent._state import RunState
from threadline.messages import ModelRequest, ModelResponse, SystemPromptPart, ToolCallPart, repair_report

__all__ = ['clean_history_at_start', 'refresh_dynamic_system_prompts']


def clean_history_at_start(state: RunState) -> None:
    """Repair the given history once, in place of the run's copy (so stored history may show merged
    messages). The last response's calls are left alone (the live frontier) unless the history is
    evidently interrupted: a trailing request marked interrupted, or a last response marked
    interrupted (a cancelled stream), whose calls are then closed as interrupted and never
    executed, with or without a new prompt (document 001; the reference executes them)."""
    history = state.history
    if not history:
        return
    last = history[-1]
    interrupted = (isinstance(last, ModelRequest) and last.state == 'interrupted') or (
        isinstance(last, ModelResponse)
        and last.state == 'interrupted'
        and any(isinstance(p, ToolCallPart) for p in last.parts)
    )
    if not state.prepared.needs_repair(history, repair_last_response=interrupted):
        # Rendered now too, and kept by the agent as it is here: the next run over this history,
        # or over its continuation, starts from a copy and prepares only what is new.
        state.prepared.render(state.model.profile)
        state.agent._last_prepared = state.prepared.copy()
        return
    repaired, events = repair_report(history, repair_last_response=interrupted)
    if events:
        history[:] = repaired
        state.repair_events.extend(events)
        state.ctx.repair_events.extend(events)


async def refresh_dynamic_system_prompts(state: RunState) -> None:
    """A system prompt part written by a `dynamic=True` function is rendered again on every run
    over the history (its text may depend on deps or time). The message holding it is replaced by
    a copy, so the caller's history is left as it was."""
    if not state.dynamic_system_prompts or not state.history:
        return
    for index, message in enumerate(state.history):
        if not isinstance(message, ModelRequest):
            continue
        parts = list(message.parts)
        changed = False
        for j, part in enumerate(parts):
            ref = getattr(part, 'dynamic_ref', None)
            if isinstance(part, SystemPromptPart) and ref in state.dynamic_system_prompts:
                text = await state.render(state.dynamic_system_prompts[ref]) or ''
                if text != part.content:
                    parts[j], changed = replace(part, content=text), True
        if changed:
            state.history[index] = replace(message, parts=parts)
