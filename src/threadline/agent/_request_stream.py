"""A model request streamed to its caller (`ModelRequestNode.stream`), inside the run's
`wrap_model_request` hooks when it has any.

The hooks enclose the request as they do a request that is not streamed; the caller reads the
stream while they wait. This is pydantic-ai 2.62's hand-off, and its rules are these:

- The hooks run in a task of their own. Their handler runs the `before_model_request` hooks,
  opens the model's stream and hands it to the caller; once the caller's block ends it closes the
  stream and returns the response through the `after_model_request` hooks. The response
  recorded is the one streamed: what the caller has read cannot be replaced by what an
  `after_model_request` or `wrap_model_request` hook returns.
- Context variables the `before_model_request` hooks set are set in the caller's task too, as
  they would be for a request that is not streamed.
- A hook that answers without calling its handler, or raises `SkipModelRequest` before the model
  was asked, gives the caller that response replayed as a stream, each part whole in one
  `PartStartEvent`. One that raises `ModelRetry` before it does asks the model again (an empty stream, then
  a retry prompt); `ModelRetry` once the caller has read the stream is an
  `UnexpectedModelBehavior`, since what was streamed cannot be taken back.
- An error the caller's block raises reaches the hooks through their handler and is raised to
  the caller whatever they do with it.
- The handler has `streams_to_caller = True`, so a hook that cannot enclose a stream (a durable
  step) can refuse it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from threadline.agent._wrap_run import Changes, context_changes, handed_over_or_done
from threadline.agent.capability import ModelRequestContext
from threadline.exceptions import ModelRetry, SkipModelRequest, UnexpectedModelBehavior, UserError
from threadline.messages import ModelMessage, ModelResponse
from threadline.models import CompleteResponseStream, FallbackModel, Model, StreamedResponse
from threadline.models.budget import request_timeout, within_deadline
from threadline.models.wrapper import borrowing

if TYPE_CHECKING:
    from threadline.agent._graph import ModelRequestNode
    from threadline.agent._state import RunState

__all__ = ['STREAM_RETRY', 'serving', 'streamed_request']

_Retry = Callable[['RunState', ModelRetry], Awaitable['ModelRequestNode']]
STREAM_RETRY = (
    'A model request hook rejected the streamed response with `ModelRetry`, and retries are not supported in '
    '`run_stream()`'
)


@contextlib.asynccontextmanager
async def streamed_request(node: ModelRequestNode, state: RunState, retry: _Retry) -> AsyncIterator[StreamedResponse]:
    """Stream `node`'s request; when the block ends, `node.result` is the node after it. `retry`
    makes the retry request after a hook's `ModelRetry`."""
    if not state.capabilities.has('wrap_model_request'):
        opened = await node._open(state)
        try:
            request_context, prepared = await node._before(state, opened)
        except SkipModelRequest as skip:  # a hook answered in the model's place: replayed
            yield CompleteResponseStream(skip.response)
            node.result = node._record(state, opened.model, skip.response)
            return
        async with _model_stream(node, state, request_context, prepared) as streamed:
            yield streamed
        response = _settled(node, streamed)
        if node._outcome != 'abandoned':
            if node._outcome != 'failed':
                await _after(node, state, request_context, response)
            node.result = node._record(state, request_context.model, response)
        return
    async with _wrapped(node, state, retry) as streamed:
        yield streamed


@contextlib.asynccontextmanager
async def _model_stream(
    node: ModelRequestNode, state: RunState, request_context: ModelRequestContext, prepared: list[ModelMessage]
) -> AsyncIterator[StreamedResponse]:
    node._outcome = 'complete'
    params, settings = request_context.model_request_parameters, request_context.model_settings
    # A FallbackModel gives each of its models a deadline of its own.
    timeout = None if isinstance(request_context.model, FallbackModel) else request_timeout(settings)
    async with contextlib.AsyncExitStack() as stack:
        model = await stack.enter_async_context(serving(state, request_context.model))
        started = asyncio.get_running_loop().time()
        opening = stack.enter_async_context(model.request_stream(prepared, settings, params))
        streamed = await within_deadline(model.model_name, timeout, opening)
        if timeout is not None:  # what is left of it covers reading to the last chunk
            streamed.deadline = (started + timeout, timeout)
        node._streamed = streamed
        if state.limits.has_token_limits():
            streamed.watch = lambda so_far: state.limits.check_tokens(state.ctx.usage + so_far)
        yield streamed


def _settled(node: ModelRequestNode, streamed: StreamedResponse) -> ModelResponse:
    response = streamed.get()
    if node._outcome in ('interrupted', 'failed'):
        response.state = 'interrupted'
    elif response.state == 'incomplete':
        response.state = 'complete'
    return response


async def _after(
    node: ModelRequestNode, state: RunState, request_context: ModelRequestContext, response: ModelResponse
) -> ModelResponse:
    try:
        return await node._after(state, request_context, response)
    except ModelRetry:
        raise UnexpectedModelBehavior(STREAM_RETRY) from None


@contextlib.asynccontextmanager
async def _wrapped(node: ModelRequestNode, state: RunState, retry: _Retry) -> AsyncIterator[StreamedResponse]:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[StreamedResponse] = loop.create_future()
    done: asyncio.Future[None] = loop.create_future()
    sent: list[ModelRequestContext] = []
    answered: list[ModelResponse] = []
    changes: Changes = []

    async def handler(request_context: ModelRequestContext) -> ModelResponse:
        """The request, streamed to the caller (`handler.streams_to_caller` says so to a hook)."""
        if sent:
            raise UserError('`wrap_model_request` may call its handler only once')
        before = contextvars.copy_context()
        request_context, prepared = await node._before(state, request_context)
        changes[:] = context_changes(before, contextvars.copy_context())
        sent.append(request_context)
        async with _model_stream(node, state, request_context, prepared) as streamed:
            ready.set_result(streamed)
            await done
        response = _settled(node, streamed)
        answered.append(response)
        if node._outcome in ('abandoned', 'failed'):
            return response
        return await node._after(state, request_context, response)

    handler.streams_to_caller = True  # type: ignore[attr-defined]
    opened = await node._open(state)
    hooks = asyncio.ensure_future(state.capabilities.wrap_model_request(state.ctx, opened, handler))
    await handed_over_or_done(ready, hooks)
    for var, value in changes:
        var.set(value)
    if not ready.done():
        ready.cancel()
        async with _answered(node, state, opened, hooks, retry) as streamed:
            yield streamed
        return
    try:
        yield ready.result()
    except BaseException as exc:
        done.set_exception(exc)
        with contextlib.suppress(BaseException):  # the caller's own error is the one raised
            await hooks
        raise
    done.set_result(None)
    try:
        await hooks
    except ModelRetry:
        raise UnexpectedModelBehavior(STREAM_RETRY) from None
    if node._outcome != 'abandoned':  # what was streamed is what happened, whatever a hook returns
        node.result = node._record(state, sent[-1].model, answered[-1])


@contextlib.asynccontextmanager
async def _answered(
    node: ModelRequestNode,
    state: RunState,
    opened: ModelRequestContext,
    hooks: asyncio.Future[ModelResponse],
    retry: _Retry,
) -> AsyncIterator[StreamedResponse]:
    """A hook answered without the model: its response replayed, or a retry after an empty stream."""
    try:
        response = await hooks
    except SkipModelRequest as skip:
        response = skip.response
    except ModelRetry as error:
        yield CompleteResponseStream(ModelResponse(parts=[]))
        node.result = await retry(state, error)
        return
    yield CompleteResponseStream(response)
    node.result = node._record(state, opened.model, response)


@contextlib.asynccontextmanager
async def serving(state: RunState, model: Model) -> AsyncIterator[Model]:
    """`model` inside the capabilities' `get_wrapper_model` wrappers, entered for one request."""
    if not state.capabilities.has('get_wrapper_model'):
        yield model
        return
    wrapped = state.capabilities.wrap_model(model)
    if wrapped is model:
        yield model
        return
    with borrowing(model):  # the wrapper is this request's; `model` is its owner's to close
        await wrapped.__aenter__()
    try:
        yield wrapped
    except BaseException as error:
        with borrowing(model):
            await wrapped.__aexit__(type(error), error, error.__traceback__)
        raise
    with borrowing(model):
        await wrapped.__aexit__(None, None, None)
