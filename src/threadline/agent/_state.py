"""The mutable state of one run, shared by its nodes, and the capability chain runners."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..capabilities import AbstractCapability, ModelRequestContext
from ..messages import ModelMessage, ModelResponse, RunUsage, SystemPromptPart
from ..models import Model, ModelRequestParameters, ModelSettings
from ._context import RunContext
from ._limits import UsageLimits
from ._output import DeferredToolResults, OutputSpec
from ._tools import Tool

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ['RunState', 'now_utc']


def now_utc() -> datetime:
    return datetime.now(tz=UTC)


InstructionSource = str | Callable[..., Any]


@dataclass
class RunState:
    """Everything a run's nodes read and write. `history` is `ctx.messages` (one list)."""

    agent: Agent[Any, Any]
    model: Model
    ctx: RunContext[Any]
    run_usage: RunUsage
    limits: UsageLimits
    settings: ModelSettings | None
    output: OutputSpec
    tools: dict[str, Tool[Any]]
    capabilities: Sequence[AbstractCapability]
    instruction_sources: Sequence[InstructionSource]
    system_prompt_sources: Sequence[InstructionSource]
    dynamic_system_prompts: dict[str, Callable[..., Any]]
    output_validators: Sequence[Callable[..., Any]]
    max_retries: int
    user_prompt: Any
    deferred_results: DeferredToolResults | None
    new_message_index: int = 0
    output_retries: int = 0
    warned_kinds: set[str] = field(default_factory=set)

    @property
    def history(self) -> list[ModelMessage]:
        return self.ctx.messages

    # -- stamping ---------------------------------------------------------------------------
    def stamp(self, message: ModelMessage) -> ModelMessage:
        """Fill the run's ids into a message the run created (values already set are kept)."""
        if message.run_id is None:
            message.run_id = self.ctx.run_id
        if message.conversation_id is None:
            message.conversation_id = self.ctx.conversation_id
        return message

    def append(self, message: ModelMessage) -> None:
        self.history.append(self.stamp(message))

    # -- instructions and system prompts ----------------------------------------------------
    async def _render(self, source: InstructionSource) -> str | None:
        if isinstance(source, str):
            return source
        value = source(self.ctx) if _wants_ctx(source) else source()
        if inspect.isawaitable(value):
            value = await value
        return value if value is None else str(value)

    async def instructions(self) -> str | None:
        """The running agent's instructions for this step, joined by blank lines; None if empty."""
        texts = [await self._render(source) for source in self.instruction_sources]
        joined = '\n\n'.join(t for t in texts if t).strip()
        return joined or None

    async def system_prompt_parts(self) -> list[SystemPromptPart]:
        parts = []
        for source in self.system_prompt_sources:
            text = await self._render(source)
            if text:
                parts.append(SystemPromptPart(text))
        for name, fn in self.dynamic_system_prompts.items():
            text = await self._render(fn)
            if text:
                parts.append(SystemPromptPart(text, dynamic_ref=name))
        return parts

    async def request_parameters(self) -> ModelRequestParameters:
        return ModelRequestParameters(
            function_tools=[tool.tool_def for tool in self.tools.values()],
            output_tools=self.output.output_tools,
            allow_text_output=self.output.allow_text,
            instructions=await self.instructions(),
        )

    def warn_skipped(self, kinds: set[str]) -> None:
        """One warning per run for each part kind the model cannot be sent."""
        fresh = sorted(kinds - self.warned_kinds)
        if fresh:
            self.warned_kinds.update(fresh)
            warnings.warn(
                f'Skipped part or content kind(s) {fresh} when sending the history to the model: this version '
                'of Threadline does not know them (written by a newer version). They stay in the stored history.',
                UserWarning,
                stacklevel=2,
            )

    # -- capability chains -----------------------------------------------------------------
    async def before_model_request(self, request_context: ModelRequestContext) -> ModelRequestContext:
        for capability in self.capabilities:
            changed = await capability.before_model_request(self.ctx, request_context)
            request_context = changed if changed is not None else request_context
        return request_context

    async def after_model_request(self, request_context: ModelRequestContext, response: ModelResponse) -> ModelResponse:
        for capability in reversed(self.capabilities):
            changed = await capability.after_model_request(self.ctx, request_context=request_context, response=response)
            response = changed if changed is not None else response
        return response

    async def on_model_request_error(self, request_context: ModelRequestContext, error: Exception) -> ModelResponse:
        for capability in reversed(self.capabilities):
            try:
                return await capability.on_model_request_error(self.ctx, request_context=request_context, error=error)
            except Exception as raised:  # noqa: BLE001 - the next handler sees what this one raised
                error = raised
        raise error


def _wants_ctx(fn: Callable[..., Any]) -> bool:
    try:
        return len(inspect.signature(fn).parameters) >= 1
    except (TypeError, ValueError):
        return False
