"""`async with agent:`: the agent's toolsets and model entered once for many runs.

Rules (pydantic-ai 2.62's):
- Entering enters the agent's toolsets (a server-backed toolset starts once, not once per run)
  and its model (a provider's HTTP client, which the end of the block closes). The model is the
  one in force: an `override(model=...)` around the block, else the agent's own; a model given
  by name is looked up now. With no model yet, only the toolsets are entered.
- Entering counts: nested and concurrent blocks share one entry, and only the last exit leaves.
- What fails to enter leaves what was entered before it, and the error is raised.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any, Self

from threadline.agent._state import AnyToolset
from threadline.models import Model, infer_model

__all__ = ['EnteredAgent']


class EnteredAgent:
    """The base of `Agent` that makes it an async context manager (see the module docstring)."""

    model: Model | str | None
    _overrides: Any
    _entered_count: int = 0
    _exit_stack: contextlib.AsyncExitStack | None = None

    @property
    def toolsets(self) -> Sequence[AnyToolset]:
        raise NotImplementedError

    def _enter_lock(self) -> asyncio.Lock:
        """A lock of the running event loop's (an agent may be entered under one `asyncio.run`,
        then under another)."""
        loop = asyncio.get_running_loop()
        held: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = self.__dict__.get('_lifecycle_lock')
        if held is None or held[0] is not loop:
            held = self.__dict__['_lifecycle_lock'] = (loop, asyncio.Lock())
        return held[1]

    async def __aenter__(self) -> Self:
        async with self._enter_lock():
            if self._entered_count == 0:
                async with contextlib.AsyncExitStack() as stack:
                    for toolset in self.toolsets:
                        await stack.enter_async_context(toolset)
                    model = self._overrides.get().get('model', self.model)
                    if model is not None:
                        await stack.enter_async_context(infer_model(model))
                    self._exit_stack = stack.pop_all()
            self._entered_count += 1
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        async with self._enter_lock():
            if self._entered_count == 0:
                return None
            self._entered_count -= 1
            if self._entered_count == 0 and self._exit_stack is not None:
                stack, self._exit_stack = self._exit_stack, None
                await stack.aclose()
        return None
