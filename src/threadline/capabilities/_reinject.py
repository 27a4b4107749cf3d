"""`ReinjectSystemPrompt`: put the agent's system prompt back when a history arrives without it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from threadline.agent.capability import AbstractCapability, CapabilityDepsT, ModelRequestContext
from threadline.messages import ModelMessage, ModelRequest, SystemPromptPart

if TYPE_CHECKING:
    from threadline.agent import AgentRunResult, RunContext

__all__ = ['ReinjectSystemPrompt']


class ReinjectSystemPrompt(AbstractCapability[CapabilityDepsT]):
    """Reinjects the agent's configured system prompt at the head of the first request.

    Histories from a UI, a store that dropped system prompts, or a compaction pipeline may arrive
    without one. Rules, applied to both the stored history and the copy sent to the model:
    - default: a history with no `SystemPromptPart` anywhere gets the agent's system prompt parts
      prepended to its first request; a history that has one (even another agent's) is left alone;
    - `replace_existing=True`: system prompt parts that were in the history when the run started
      are removed, then the agent's are prepended, so another agent's prompt stops being
      authoritative; parts added during the run (mid-run instructions) are kept, and a request
      left empty is dropped.
    """

    def __init__(self, replace_existing: bool = False) -> None:
        self.replace_existing = replace_existing
        self._initial: dict[str, set[int]] = {}

    async def before_run(self, ctx: RunContext[CapabilityDepsT]) -> None:
        self._initial[ctx.run_id] = {
            id(p)
            for m in ctx.messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, SystemPromptPart)
        }

    async def after_run(self, ctx: RunContext[CapabilityDepsT], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        self._initial.pop(ctx.run_id, None)
        return result

    async def before_model_request(
        self, ctx: RunContext[CapabilityDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        if ctx.agent is None:
            return request_context
        parts = await ctx.agent.system_prompt_parts(ctx)
        if not parts:
            return request_context
        initial = self._initial.get(ctx.run_id, set())
        ctx.messages[:] = self._apply(ctx.messages, parts, initial)
        request_context.messages = self._apply(request_context.messages, parts, initial)
        return request_context

    def _apply(
        self, messages: list[ModelMessage], parts: list[SystemPromptPart], initial: set[int]
    ) -> list[ModelMessage]:
        if self.replace_existing:
            messages = self._strip(messages, parts, initial)
        elif any(isinstance(p, SystemPromptPart) for m in messages if isinstance(m, ModelRequest) for p in m.parts):
            return messages
        out = list(messages)
        for index, message in enumerate(out):
            if isinstance(message, ModelRequest):
                out[index] = msgspec.structs.replace(message, parts=[*parts, *message.parts])
                return out
        return [ModelRequest(parts=list(parts)), *out]

    def _strip(
        self, messages: list[ModelMessage], parts: list[SystemPromptPart], initial: set[int]
    ) -> list[ModelMessage]:
        mine = {(p.content, p.dynamic_ref) for p in parts}
        out: list[ModelMessage] = []
        for message in messages:
            if not isinstance(message, ModelRequest):
                out.append(message)
                continue
            kept = [
                p
                for p in message.parts
                if not (isinstance(p, SystemPromptPart) and (id(p) in initial or (p.content, p.dynamic_ref) in mine))
            ]
            if len(kept) == len(message.parts):
                out.append(message)
            elif kept:
                out.append(msgspec.structs.replace(message, parts=kept))
        return out
