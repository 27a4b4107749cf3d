"""Hooks that answer in place of the model, the validation or the tool (`SkipModelRequest`,
`SkipToolValidation`, `SkipToolExecution`), responses the model's limits cut short
(`ContentFilterError`, `IncompleteToolCall`, a `None` output), and `FunctionToolCallEvent.args_valid`,
as pydantic-ai 2.62 runs them: one script body on both libraries, the results compared."""

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from tests.compat._libs import library_with, parts_of

LIBS = ('ref', 'ours')


def _names(name: str) -> SimpleNamespace:
    return library_with(
        name,
        exceptions=(
            'ContentFilterError',
            'IncompleteToolCall',
            'SkipModelRequest',
            'SkipToolExecution',
            'SkipToolValidation',
            'UnexpectedModelBehavior',
        ),
        messages=('FunctionToolCallEvent', 'FunctionToolResultEvent', 'ThinkingPart', 'PartStartEvent'),
    )


def _model(lib: SimpleNamespace, first: list[Any], finish_reason: Any = None, details: Any = None) -> Any:
    """A model that answers `first`, then `done` to every later request."""
    asked = []

    def answer(messages: Any, info: Any) -> Any:
        asked.append(1)
        if len(asked) > 1:
            return lib.ModelResponse(parts=[lib.TextPart('done')])
        return lib.ModelResponse(parts=list(first), finish_reason=finish_reason, provider_details=details)

    return lib.FunctionModel(answer)


def _outcome(run: Any) -> tuple[Any, ...]:
    try:
        result = run()
    except Exception as error:  # noqa: BLE001 - the type is what is compared
        return ('error', type(error).__name__, str(error).split(', body')[0][:120])
    return ('ok', result.output, parts_of(result.all_messages(), 'text', 'tool-call', 'tool-return'))


# --- SkipModelRequest ---------------------------------------------------------------------------


def _skip_model(name: str, where: str, stream: bool) -> tuple[Any, ...]:
    lib = _names(name)
    log: list[str] = []
    canned = lib.ModelResponse(parts=[lib.TextPart('from the hook')])

    class Skipping(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
            log.append('after')
            return response

    async def before(self: Any, ctx: Any, request_context: Any) -> Any:
        log.append('before')
        raise lib.SkipModelRequest(canned)

    async def wrap(self: Any, ctx: Any, *, request_context: Any, handler: Any) -> Any:
        log.append('wrap')
        raise lib.SkipModelRequest(canned)

    if where == 'before':
        Skipping.before_model_request = before
    else:
        Skipping.wrap_model_request = wrap

    def answer(messages: Any, info: Any) -> Any:
        log.append('model')
        return lib.ModelResponse(parts=[lib.TextPart('from the model')])

    async def streamed(messages: Any, info: Any) -> Any:
        log.append('model')
        yield 'from the model'

    agent = lib.Agent(lib.FunctionModel(answer, stream_function=streamed), capabilities=[Skipping()])
    if not stream:
        result = agent.run_sync('hi')
        return (result.output, result.usage.requests, log, parts_of(result.all_messages(), 'text'))

    async def events() -> list[Any]:
        seen = []
        async with agent.iter('hi') as run:
            async for node in run:
                if agent.is_model_request_node(node):
                    async with node.stream(run.ctx) as stream:
                        seen += [
                            (type(e).__name__, getattr(getattr(e, 'part', None), 'content', None)) async for e in stream
                        ]
        return [run.result.output, seen, log]

    return tuple(asyncio.run(events()))


@pytest.mark.parametrize('where', ['before', 'wrap'])
@pytest.mark.parametrize('stream', [False, True], ids=['run', 'node-stream'])
def test_a_hook_may_answer_in_the_models_place(where: str, stream: bool) -> None:
    ours = _skip_model('ours', where, stream)
    assert ours == _skip_model('ref', where, stream)
    assert 'model' not in ours[-1] and 'after' not in ours[-1]


# --- SkipToolValidation / SkipToolExecution -----------------------------------------------------


def _skip_tool(name: str, hook: str) -> tuple[Any, ...]:
    lib = _names(name)
    log: list[str] = []

    class Skipping(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def after_tool_validate(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
            log.append(f'after_validate {args}')
            return args

        async def after_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, result: Any) -> Any:
            log.append(f'after_execute {result}')
            return result

        async def on_tool_execute_error(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, error: Any) -> Any:
            log.append(f'error {type(error).__name__}')
            raise error

    async def before_validate(self: Any, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
        raise lib.SkipToolValidation({'n': 41})

    async def wrap_validate(self: Any, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
        raise lib.SkipToolValidation({'n': 40})

    async def before_execute(self: Any, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
        raise lib.SkipToolExecution('skipped before')

    async def wrap_execute(self: Any, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
        raise lib.SkipToolExecution('skipped around')

    chosen = {
        'before_tool_validate': before_validate,
        'wrap_tool_validate': wrap_validate,
        'before_tool_execute': before_execute,
        'wrap_tool_execute': wrap_execute,
    }
    if hook != 'tool':
        setattr(Skipping, hook, chosen[hook])
    model = _model(lib, [lib.ToolCallPart('plus_one', {'n': 'not a number'}, 'c1')])
    agent = lib.Agent(model, capabilities=[Skipping()])

    @agent.tool_plain
    def plus_one(n: int) -> int:
        log.append(f'tool {n}')
        if hook == 'tool':
            raise lib.SkipToolExecution('the tool skipped itself')
        return n + 1

    result = agent.run_sync('hi')
    return (result.usage.tool_calls, log, parts_of(result.all_messages(), 'tool-return'))


@pytest.mark.parametrize(
    'hook', ['before_tool_validate', 'wrap_tool_validate', 'before_tool_execute', 'wrap_tool_execute', 'tool']
)
def test_a_hook_may_answer_in_place_of_validation_or_the_tool(hook: str) -> None:
    assert _skip_tool('ours', hook) == _skip_tool('ref', hook)


# --- responses cut short ------------------------------------------------------------------------


def _cut_short(name: str, case: str) -> tuple[Any, ...]:
    lib = _names(name)
    thinking = lib.ThinkingPart('hmm')
    cases: dict[str, tuple[list[Any], Any, Any, Any]] = {
        'empty, None allowed': ([], None, None, str | None),
        'thinking only, None allowed': ([thinking], None, None, str | None),
        'blank text': ([lib.TextPart('')], None, None, str),
        'thinking only, length': ([thinking], 'length', None, str),
        'blank text, length': ([lib.TextPart('')], 'length', None, str),
        'filtered': ([], 'content_filter', {'finish_reason': 'SAFETY'}, str),
        'filtered, blocked': ([thinking], 'content_filter', {'block_reason': 'OTHER'}, str),
        'filtered, with text': ([lib.TextPart('fine')], 'content_filter', None, str),
    }
    parts, finish, details, output_type = cases[case]
    agent = lib.Agent(_model(lib, parts, finish, details), output_type=output_type)
    return _outcome(lambda: agent.run_sync('hi'))


@pytest.mark.parametrize(
    'case',
    [
        'empty, None allowed',
        'thinking only, None allowed',
        'blank text',
        'thinking only, length',
        'blank text, length',
        'filtered',
        'filtered, blocked',
        'filtered, with text',
    ],
)
def test_a_response_without_output(case: str) -> None:
    assert _cut_short('ours', case) == _cut_short('ref', case)


def test_a_filtered_response_is_on_the_error_but_not_in_its_message() -> None:
    lib = _names('ours')
    model = _model(lib, [lib.ThinkingPart('a private thought')], 'content_filter', {'finish_reason': 'SAFETY'})
    with pytest.raises(lib.ContentFilterError) as caught:
        lib.Agent(model).run_sync('hi')
    assert 'private thought' not in str(caught.value)
    assert 'private thought' in (caught.value.body or '')


def _truncated_call(name: str, tool: str, max_tokens: int | None, finish: Any) -> tuple[Any, ...]:
    lib = _names(name)

    def answer(messages: Any, info: Any) -> Any:
        return lib.ModelResponse(parts=[lib.TextPart('a'), lib.ToolCallPart(tool, '{"n": ')], finish_reason=finish)

    agent = lib.Agent(lib.FunctionModel(answer), output_type=int, retries=1)

    @agent.tool_plain
    def lookup(n: int) -> int:
        return n

    settings = {'max_tokens': max_tokens} if max_tokens else None
    return _outcome(lambda: agent.run_sync('hi', model_settings=settings))


@pytest.mark.parametrize(
    ('tool', 'max_tokens', 'finish'),
    [
        ('final_result', 7, 'length'),
        ('final_result', None, 'length'),
        ('lookup', None, 'length'),
        ('final_result', None, None),
    ],
)
def test_a_tool_call_the_token_limit_cut_short(tool: str, max_tokens: int | None, finish: Any) -> None:
    assert _truncated_call('ours', tool, max_tokens, finish) == _truncated_call('ref', tool, max_tokens, finish)


# --- FunctionToolCallEvent.args_valid -----------------------------------------------------------


def _call_events(name: str) -> tuple[Any, ...]:
    lib = _names(name)
    hooks: list[tuple[str, str]] = []

    class Watching(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def before_tool_validate(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
            hooks.append(('validate', call.tool_call_id))
            return args

        async def before_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any) -> Any:
            hooks.append(('execute', call.tool_call_id))
            return args

    calls = [
        lib.ToolCallPart('count', {'n': 1}, 'c1'),
        lib.ToolCallPart('count', {'n': 'many'}, 'c2'),
        lib.ToolCallPart('approve_me', {}, 'c3'),
        lib.ToolCallPart('count', {'n': 2}, 'c4'),
    ]
    agent = lib.Agent(_model(lib, calls), capabilities=[Watching()], output_type=[str, lib.DeferredToolRequests])

    @agent.tool_plain
    async def count(n: int) -> int:
        return n

    @agent.tool_plain(requires_approval=True)
    def approve_me() -> str:
        return 'approved'

    async def run() -> list[Any]:
        events: list[Any] = []
        async with agent.iter('hi') as agent_run:
            async for node in agent_run:
                if agent.is_call_tools_node(node):
                    async with node.stream(agent_run.ctx) as stream:
                        async for e in stream:
                            if isinstance(e, lib.FunctionToolCallEvent):
                                events.append(('call', e.part.tool_call_id, e.args_valid))
                            elif isinstance(e, lib.FunctionToolResultEvent):
                                events.append(('result', e.tool_call_id))
        return [events, type(agent_run.result.output).__name__]

    return (*asyncio.run(run()), hooks)


def _in_order(events: list[Any]) -> list[Any]:
    """The events with each run of result events sorted: pydantic-ai emits those as the calls
    finish, in no fixed order; Threadline in call order."""
    out: list[Any] = []
    for event in events:
        if event[0] == 'result' and out and out[-1][0] == 'results':
            out[-1] = ('results', sorted([*out[-1][1], event[1]]))
        else:
            out.append(('results', [event[1]]) if event[0] == 'result' else event)
    return out


def test_a_call_event_follows_the_check_and_says_whether_the_arguments_were_valid() -> None:
    ours, reference = _call_events('ours'), _call_events('ref')
    assert (_in_order(ours[0]), *ours[1:]) == (_in_order(reference[0]), *reference[1:])
    assert _in_order(ours[0]) == [
        ('call', 'c1', True),
        ('call', 'c2', False),
        ('call', 'c4', True),
        ('results', ['c1', 'c2', 'c4']),
        ('call', 'c3', True),
    ]


# --- a short-circuited response, replayed to each kind of consumer ------------------------------


def _replayed(name: str, consumer: str) -> list[Any]:
    lib = _names(name)
    canned = lib.ModelResponse(parts=[lib.TextPart('canned '), lib.TextPart('answer')])

    class Answering(lib.AbstractCapability):  # type: ignore[name-defined, misc]
        async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
            return canned

    async def never(messages: Any, info: Any) -> Any:
        raise AssertionError('the model was asked')
        yield ''

    agent = lib.Agent(lib.FunctionModel(stream_function=never), capabilities=[Answering()])

    def described(event: Any) -> tuple[Any, ...]:
        part = getattr(event, 'part', None)
        return (type(event).__name__, getattr(part, 'content', None) if part is not None else None)

    async def run() -> list[Any]:
        if consumer == 'run_stream_events':
            async with agent.run_stream_events('hi') as stream:
                return [described(e) async for e in stream]
        if consumer == 'event_stream_handler':
            seen: list[Any] = []

            async def handler(ctx: Any, events: Any) -> None:
                seen.extend([described(e) async for e in events])

            result = await agent.run('hi', event_stream_handler=handler)
            return [*seen, result.output]
        async with agent.run_stream('hi') as streamed:
            texts = [t async for t in streamed.stream_text(debounce_by=None)]
            return [texts, await streamed.get_output()]

    return asyncio.run(run())


@pytest.mark.parametrize('consumer', ['run_stream_events', 'event_stream_handler'])
def test_a_response_a_hook_gave_is_replayed_as_a_stream(consumer: str) -> None:
    assert _replayed('ours', consumer) == _replayed('ref', consumer)


def test_a_replayed_response_streams_its_text_once() -> None:
    """pydantic-ai 2.62's `stream_text` repeats the last part of a replayed response ('canned
    answeranswer' before the output 'canned answer'); Threadline streams each part once. The
    output is the same."""
    ours, reference = _replayed('ours', 'run_stream'), _replayed('ref', 'run_stream')
    assert ours == [['canned ', 'canned answer'], 'canned answer']
    assert reference[1] == ours[1] and reference[0][:2] == ours[0]


def _live(name: str) -> list[Any]:
    lib = _names(name)
    asked: list[int] = []

    async def streamed(messages: Any, info: Any) -> Any:
        asked.append(1)
        if len(asked) > 1:
            yield 'done'
            return
        yield 'let me look '
        yield {0: lib.DeltaToolCall('count', '{"n": 1}', tool_call_id='c1')}
        yield {1: lib.DeltaToolCall('count', '{"n": 2}', tool_call_id='c2')}

    agent = lib.Agent(lib.FunctionModel(stream_function=streamed))

    @agent.tool_plain
    def count(n: int) -> int:
        return n

    async def run() -> list[Any]:
        out = []
        async with agent.run_stream_events('hi') as stream:
            async for e in stream:
                kind = e.event_kind
                if kind == 'part_start':
                    out.append((kind, e.index, e.part.part_kind, e.previous_part_kind))
                elif kind == 'part_end':
                    out.append((kind, e.index, e.part.part_kind, e.next_part_kind))
        return out

    return asyncio.run(run())


def test_a_live_stream_ends_each_part_as_the_next_starts() -> None:
    ours = _live('ours')
    assert ours == _live('ref')
    assert ours[:3] == [
        ('part_start', 0, 'text', None),
        ('part_end', 0, 'text', 'tool-call'),
        ('part_start', 1, 'tool-call', 'text'),
    ]
