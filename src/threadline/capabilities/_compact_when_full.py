"""`CompactWhenFull`: compact a history only when the next request would fill the model's window."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from threadline.agent.capability import ModelRequestContext
from threadline.capabilities._process_history import HistoryProcessor, ProcessHistory
from threadline.models.budget import context_window_fraction

if TYPE_CHECKING:
    from threadline.agent import RunContext

__all__ = ['CompactWhenFull']


class CompactWhenFull(ProcessHistory):
    """Runs `processor` (e.g. `KeepLastTurns(4)` or `SummarizeOlderTurns(model)`) before a model
    request only when that request would fill more than `threshold` of the model's context window.

        Agent(model, capabilities=[CompactWhenFull(SummarizeOlderTurns('openai:gpt-5.2-mini'))])

    Rules:
    - The share is `RunContext.context_window_used` measured on the history about to be sent:
      the last response's reported tokens plus an estimate of what came after it. A
      `FallbackModel` measures against the smallest window of its models.
    - Below the threshold, or when the share is unknown (no response yet, no usage reported, a
      model whose window is unknown: set `ModelProfile(context_window=...)` for those), the
      history is sent as it is: an unknown share is never taken as empty or as full.
    - Otherwise it behaves as `ProcessHistory`: the processor's list is both sent and stored as
      the run's history. The processors of `threadline.capabilities` keep tool calls with their
      results and the standing system prompt, so what they return is valid for every provider;
      a processor of your own must keep those rules (or put `ReinjectSystemPrompt` after it).
    """

    def __init__(self, processor: HistoryProcessor, *, threshold: float = 0.8) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f'threshold is a share of the context window, above 0 and at most 1, not {threshold}')
        super().__init__(processor)
        self.threshold = threshold

    def __repr__(self) -> str:
        return f'CompactWhenFull({getattr(self.processor, "__name__", self.processor)!r}, threshold={self.threshold})'

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:

        used = context_window_fraction(request_context.messages, request_context.model.context_window)
        if used is None or used <= self.threshold:
            return request_context
        return await super().before_model_request(ctx, request_context)
