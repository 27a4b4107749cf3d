"""`AgentRun`: a run driven node by node (`agent.iter()`), and the loop `Agent.run` uses."""

from __future__ import annotations

import asyncio
from typing import Any, Generic

from threadline.agent._graph import AgentNode, End, FinalResult, ModelRequestNode, NodeResult, UserPromptNode
from threadline.agent._isolated import isolated
from threadline.agent._metadata import resolve_metadata
from threadline.agent._result import AgentRunResult, OutputDataT
from threadline.agent._state import RunState
from threadline.exceptions import UserError
from threadline.messages import ModelMessage, ModelRequest, RunUsage

__all__ = ['AgentRun']


class AgentRun(Generic[OutputDataT]):
    """A run in progress. Drive it with `async for node in run`, or `await run.next(node)` from
    `run.next_node`; once it reaches `End`, `run.result` holds the result.

    `async for` yields every node, starting with the first (not yet run) and ending with `End`.
    """

    def __init__(self, state: RunState, start: AgentNode) -> None:
        self._state = state
        self._next_node: AgentNode | End[FinalResult[Any]] = start
        self._started = False
        self._result: AgentRunResult[OutputDataT] | None = None

    @classmethod
    def ended(cls, state: RunState, result: AgentRunResult[OutputDataT]) -> AgentRun[OutputDataT]:
        """A run that a `wrap_run` hook skipped: it has already ended with `result`, yields no nodes."""
        run = cls(state, UserPromptNode(None))
        run._started, run._result, run._next_node = True, result, End(FinalResult(result.output))
        return run

    def _recovered(self, result: AgentRunResult[OutputDataT] | None) -> None:
        """The result a `wrap_run` hook ended the run with (the run's own, or a recovery)."""
        if result is not None:
            self._result = result
            self._next_node = End(FinalResult(result.output))

    @property
    def ctx(self) -> RunGraphContext:
        """The run's context: `ctx.state` holds its message history, ids, step and usage (as the
        reference's graph state does); every `RunContext` attribute reads through (`ctx.deps`,
        `ctx.messages`, ...)."""
        return RunGraphContext(self._state)

    @property
    def run_id(self) -> str:
        return self._state.ctx.run_id

    @property
    def conversation_id(self) -> str:
        return self._state.ctx.conversation_id

    @property
    def next_node(self) -> AgentNode | End[FinalResult[Any]]:
        """The node that runs next (or `End` once the run is over)."""
        return self._next_node

    @property
    def result(self) -> AgentRunResult[OutputDataT] | None:
        """The result, once the run reached `End`; None before."""
        return self._result

    def all_messages(self) -> list[ModelMessage]:
        return self._state.history

    def new_messages(self) -> list[ModelMessage]:
        return self._state.history[self._state.new_message_index :]

    @property
    def usage(self) -> RunUsage:
        return self._state.ctx.usage

    async def next(self, node: AgentNode) -> NodeResult:
        """Run `node` and return the node after it. Calling it with the run's `End` is an error: a
        loop that never sees the end (testing `pydantic_graph.End` instead of `threadline.End`,
        say) stops with a clear message instead of spinning.

        The node runs in a context of its own, as pydantic-ai's graph runs each node in a task:
        context variables its hooks, model or tools set are seen later in the same node, not by
        the nodes after it or by the caller."""
        if isinstance(node, End):
            raise UserError(
                'this run has ended: stop when the node is a threadline.End (from threadline import End; '
                'pydantic_graph.End is a different class), then read agent_run.result'
            )
        cancellation = self._state.ctx._cancellation
        if cancellation is not None and cancellation.reason is not None:
            raise asyncio.CancelledError  # cancelled between nodes: the next one does not start
        return await isolated(self._run_node(node))

    async def _run_node(self, node: AgentNode) -> NodeResult:
        ran = node.result if isinstance(node, ModelRequestNode) else getattr(node, 'streamed_next', None)
        if ran is not None:  # its caller streamed it (`node.stream(agent_run.ctx)`)
            return await self.advance(node, ran)
        chain = self._state.capabilities
        if chain.has('before_node_run') or chain.has('wrap_node_run') or chain.has('on_node_run_error'):
            try:
                result = await chain.wrap_node_run(self._state.ctx, node, self._node_lifecycle)
            except Exception as error:  # noqa: BLE001 - on_run_error hooks may recover
                return await self._failed(error)
            return await self._conclude(result)
        try:
            result = await node.run(self._state)
        except Exception as error:  # noqa: BLE001 - on_run_error hooks may recover
            return await self._failed(error)
        return await self.advance(node, result)

    async def _node_lifecycle(self, node: AgentNode) -> NodeResult:
        """One node as `wrap_node_run`'s handler runs it: `before_node_run`, the node (errors to
        `on_node_run_error`), `after_node_run`."""
        state, chain = self._state, self._state.capabilities
        node = await chain.before_node_run(state.ctx, node)
        try:
            result: NodeResult = await node.run(state)
        except Exception as error:  # noqa: BLE001 - error hooks may recover; otherwise re-raised
            result = await chain.on_node_run_error(state.ctx, node, error)
        return await chain.after_node_run(state.ctx, node, result)

    async def advance(self, node: AgentNode, result: NodeResult) -> NodeResult:
        """Everything after a node ran: `after_node_run` hooks, queued content at the end of the
        run, and the run's result once it reaches `End` (streaming runs nodes themselves)."""
        state = self._state
        try:
            result = await state.capabilities.after_node_run(state.ctx, node, result)
        except Exception as error:  # noqa: BLE001 - on_run_error hooks may recover
            return await self._failed(error)
        return await self._conclude(result)

    async def _conclude(self, result: NodeResult) -> NodeResult:
        """Queued content at the end of the run, and the run's result once it reaches `End`."""
        state = self._state
        try:
            if isinstance(result, End):
                redirect = state.drain_at_end()
                if redirect is not None:
                    result = _redirect(redirect)
        except Exception as error:  # noqa: BLE001 - on_run_error hooks may recover
            return await self._failed(error)
        self._next_node = result
        if isinstance(result, End):
            self._result = await self._finish(result)
        return result

    async def _state_cancelled(self, error: Exception) -> None:
        """Tell capabilities the run stopped early (a cancelled stream), so stores record it."""
        await self._state.capabilities.announce_cancelled(self._state.ctx, error)

    async def _failed(self, error: Exception) -> NodeResult:
        self._result = await self._recover(error)
        result: NodeResult = End(FinalResult(self._result.output))
        self._next_node = result
        return result

    def cancel(self) -> None:
        """Stop the whole run (from any task or thread): what it is doing is torn down, and when
        the `iter()` block ends the caller gets `RunCancelled`, whose `all_messages()` resumes the
        conversation. Idempotent; a no-op once the block has ended (see `_cancel`)."""
        cancellation = self._state.ctx._cancellation
        if cancellation is not None:
            cancellation.cancel()

    def enqueue(self, *items: Any, priority: str = 'asap') -> str | None:
        """Inject content into the run from outside (see `RunContext.enqueue`); returns the enqueue id.
        Call it on the run's event loop (`loop.call_soon_threadsafe(run.enqueue, ...)` from a thread)."""
        return self._state.queue.put(items, priority=priority, tool_call_id=None)

    def __aiter__(self) -> AgentRun[OutputDataT]:
        return self

    async def __anext__(self) -> AgentNode | End[FinalResult[Any]]:
        if not self._started:
            self._started = True
            return self._next_node
        if isinstance(self._next_node, End):
            raise StopAsyncIteration
        return await self.next(self._next_node)

    def _build_result(self, output: Any, output_tool_name: str | None = None) -> AgentRunResult[OutputDataT]:
        state = self._state
        return AgentRunResult(
            output=output,
            _messages=state.history,
            _new_message_index=state.new_message_index,
            run_id=state.ctx.run_id,
            conversation_id=state.ctx.conversation_id,
            usage=state.ctx.usage,
            run_usage=state.run_usage,
            model_name=state.model.model_name,
            output_tool_name=output_tool_name,
            metadata=resolve_metadata(state.agent.metadata, state.run_metadata, state.ctx),
        )

    async def _finish(self, end: End[FinalResult[Any]]) -> AgentRunResult[OutputDataT]:
        result = self._build_result(end.data.output, end.data.tool_name)
        return await self._state.capabilities.after_run(self._state.ctx, result)

    async def _recover(self, error: Exception) -> AgentRunResult[OutputDataT]:
        return await self._state.capabilities.on_run_error(self._state.ctx, error)


def _redirect(request: ModelMessage) -> NodeResult:
    """The run would have ended, but queued content arrived: one more model request with it."""

    assert isinstance(request, ModelRequest)
    return ModelRequestNode(request)


class RunGraphState:
    """A live view of a run's state, named as the reference's `GraphAgentState` names it."""

    __slots__ = ('_state',)

    def __init__(self, state: RunState) -> None:
        self._state = state

    @property
    def message_history(self) -> list[ModelMessage]:
        return self._state.history

    @property
    def usage(self) -> Any:
        return self._state.run_usage

    @property
    def run_step(self) -> int:
        return self._state.ctx.run_step

    @property
    def run_id(self) -> str:
        return self._state.ctx.run_id

    @property
    def conversation_id(self) -> str:
        return self._state.ctx.conversation_id

    @property
    def metadata(self) -> dict[str, Any]:
        return self._state.ctx.metadata


class RunGraphContext:
    """`agent_run.ctx`: the graph state view as `state`, and the run's `RunContext` behind it."""

    __slots__ = ('_state',)

    def __init__(self, state: RunState) -> None:
        self._state = state

    @property
    def state(self) -> RunGraphState:
        return RunGraphState(self._state)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._state.ctx, name)
