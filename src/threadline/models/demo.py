"""`DemoModel`: a deterministic support-desk model for the demo and `threadline chat -m demo`.

It needs no key and no network. Rules, applied to the last request it is sent:
- a tool result: summarize it in one sentence;
- a user prompt naming an order (`order 42`): refund it if the prompt says "refund", else look
  it up (only when the agent has that tool);
- anything else: a short, friendly answer that says what it can do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from threadline.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RequestUsage,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from threadline.models._base import Model, ModelRequestParameters, ModelSettings

__all__ = ['DemoModel']

_ORDER = re.compile(r'order\s*#?\s*(\d+)', re.IGNORECASE)


class DemoModel(Model):
    """Answers support questions by rule (see the module docstring)."""

    @property
    def priced(self) -> bool:
        return False  # a local model: no price to look up

    @property
    def model_name(self) -> str:
        return 'demo'

    @property
    def system(self) -> str:
        return 'threadline-demo'

    async def request(
        self, messages: Sequence[ModelMessage], model_settings: ModelSettings | None, params: ModelRequestParameters
    ) -> ModelResponse:
        tools = {t.name for t in params.function_tools}
        last = messages[-1] if messages else None
        parts: list[Any] = [TextPart('Hello! I can look up orders and issue refunds.')]
        if isinstance(last, ModelRequest):
            results = [p for p in last.parts if isinstance(p, ToolReturnPart)]
            prompts = [p.content for p in last.parts if isinstance(p, UserPromptPart) and isinstance(p.content, str)]
            if results:
                parts = [TextPart(' '.join(f'{r.tool_name.replace("_", " ")}: {r.content}.' for r in results))]
            elif prompts:
                parts = [self._answer(prompts[-1], tools, len(messages))]
        words = sum(len(str(getattr(p, 'content', ''))) for p in parts) // 5
        return ModelResponse(
            parts=parts,
            model_name=self.model_name,
            provider_name=self.system,
            usage=RequestUsage(input_tokens=20 * len(messages), output_tokens=max(words, 1)),
        )

    def _answer(self, prompt: str, tools: set[str], position: int) -> ToolCallPart | TextPart:
        match = _ORDER.search(prompt)
        if match:
            order = match.group(1)
            if 'refund' in prompt.lower() and 'issue_refund' in tools:
                return ToolCallPart('issue_refund', {'order_id': order, 'amount': 20}, f'refund-{order}-{position}')
            if 'lookup_order' in tools:
                return ToolCallPart('lookup_order', {'order_id': order}, f'lookup-{order}-{position}')
        if 'thank' in prompt.lower():
            return TextPart('You are welcome. Anything else?')
        return TextPart(f'You said: "{prompt[:60].rstrip(".!? ")}". Ask me about an order number, or to refund one.')
