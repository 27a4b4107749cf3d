"""History and messages as in pydantic-ai 2.62, one script body on both libraries: what a history
processor's request carries when sent, dynamic system prompts, `capture_run_messages`, a run
result through a `TypeAdapter`, and the field order `dataclasses.asdict` shows."""

import dataclasses
from types import SimpleNamespace
from typing import Any

import pydantic
import pytest

from tests.compat._libs import library

LIBS = ('ref', 'ours')


def _extras(name: str) -> SimpleNamespace:
    if name == 'ref':
        from pydantic_ai import capture_run_messages
        from pydantic_ai.capabilities import ProcessHistory
        from pydantic_ai.messages import SystemPromptPart
    else:
        from threadline import capture_run_messages
        from threadline.capabilities import ProcessHistory
        from threadline.messages import SystemPromptPart
    return SimpleNamespace(
        capture_run_messages=capture_run_messages, ProcessHistory=ProcessHistory, SystemPromptPart=SystemPromptPart
    )


def history_behaviour(name: str) -> dict[str, Any]:
    lib, extra = library(name), _extras(name)
    out: dict[str, Any] = {'sent': []}

    def model(messages: list[Any], info: Any) -> Any:
        out['sent'].append([(m.kind, m.run_id is not None, m.conversation_id is not None) for m in messages])
        return lib.ModelResponse(parts=[lib.TextPart('ok')])

    def rebuild(messages: list[Any]) -> list[Any]:
        return [lib.ModelRequest(parts=[lib.UserPromptPart('rebuilt')])]

    rebuilt = lib.Agent(lib.FunctionModel(model), capabilities=[extra.ProcessHistory(rebuild)])
    out['new after a rebuilt history'] = [m.kind for m in rebuilt.run_sync('x').new_messages()]

    def make_agent() -> Any:
        agent = lib.Agent(lib.FunctionModel(model))

        @agent.system_prompt(dynamic=True)
        def nothing_yet() -> None:
            return None

        return agent

    agent = make_agent()
    result = agent.run_sync('x')
    out['dynamic'] = [
        (p.content, p.dynamic_ref)
        for m in result.all_messages()
        for p in m.parts
        if isinstance(p, extra.SystemPromptPart)
    ]

    with extra.capture_run_messages() as captured:
        agent.run_sync('first')
        agent.run_sync('second')
    out['captured'] = [p.content for m in captured for p in m.parts if p.part_kind in ('user-prompt', 'text')]

    adapter = pydantic.TypeAdapter(type(result))
    out['result round trip'] = adapter.validate_json(adapter.dump_json(result)) == result

    out['asdict'] = [
        list(dataclasses.asdict(value))
        for value in (
            lib.ToolCallPart('t', {}, 'c'),
            lib.TextPart('t'),
            lib.UserPromptPart('u'),
            lib.ModelRequest(parts=[]),
        )
    ]
    return out


def test_history_behaviour_matches_the_reference() -> None:
    ref, ours = (history_behaviour(name) for name in LIBS)
    assert ours == ref
    assert all(sent[0][1:] == (True, True) for sent in ours['sent'])  # stamped before it is sent
    assert ours['dynamic'] == [('', 'history_behaviour.<locals>.make_agent.<locals>.nothing_yet')]
    assert ours['captured'] == ['first', 'ok']
    assert ours['result round trip'] is True


def _loaded_content_types(name: str) -> list[str]:
    """The class each file in a stored history loads as: a user prompt's, a tool result's and a
    model's file part, an image and a sound each."""
    messages = __import__('pydantic_ai.messages' if name == 'ref' else 'threadline.messages', fromlist=['_'])
    png = messages.BinaryContent(data=b'\x89PNG', media_type='image/png')
    wav = messages.BinaryContent(data=b'RIFF', media_type='audio/wav')
    history = [
        messages.ModelRequest(parts=[messages.UserPromptPart(content=['look', png, wav])]),
        messages.ModelResponse(parts=[messages.FilePart(content=png), messages.FilePart(content=wav)]),
        messages.ModelRequest(parts=[messages.ToolReturnPart('draw', [png, wav], 'c1')]),
    ]
    adapter = messages.ModelMessagesTypeAdapter
    out = []
    for loaded in (
        adapter.validate_json(adapter.dump_json(history)),
        adapter.validate_python(adapter.dump_python(history)),
    ):
        user, files, tool = (m.parts for m in loaded)
        out += [type(c).__name__ for c in [*user[0].content[1:], *(p.content for p in files), *tool[0].content]]
    return out


def test_a_loaded_image_is_a_binary_image_as_in_the_reference() -> None:
    ref, ours = (_loaded_content_types(name) for name in LIBS)
    assert ours == ref
    assert ours[:2] == ['BinaryImage', 'BinaryContent']


def _older_usage(name: str, usage: dict[str, Any]) -> Any:
    messages = __import__('pydantic_ai.messages' if name == 'ref' else 'threadline.messages', fromlist=['_'])
    document = [{'kind': 'response', 'parts': [{'part_kind': 'text', 'content': 'x'}], 'usage': usage}]
    [response] = messages.ModelMessagesTypeAdapter.validate_python(document)
    return response.usage.input_tokens, response.usage.output_tokens, response.usage.details


def test_older_usage_json_loads() -> None:
    """The names pydantic-ai wrote before `input_tokens` (and `details: null`) load as it loads them;
    null counts, which older writers also left, load as 0 here (the reference refuses them)."""
    older = {'request_tokens': 3, 'response_tokens': 4, 'total_tokens': 7, 'details': None}
    ref, ours = (_older_usage(name, older) for name in LIBS)
    assert ours == ref == (3, 4, {})
    assert _older_usage('ours', {'input_tokens': None, 'output_tokens': None, 'details': None}) == (0, 0, {})


def _captured_when_a_step_stops(name: str, how: str) -> list[Any]:
    """What `capture_run_messages` holds after a tool raises or the run is cancelled mid-tool,
    one tool having finished first."""
    import asyncio
    import contextlib

    lib, extra = library(name), _extras(name)

    def model(messages: list[Any], info: Any) -> Any:
        calls = [lib.ToolCallPart('quick', {}, 'q1'), lib.ToolCallPart('slow', {}, 's1')]
        return lib.ModelResponse(parts=calls if len(messages) == 1 else [lib.TextPart('done')])

    agent = lib.Agent(lib.FunctionModel(model))

    @agent.tool_plain
    async def quick() -> str:
        return 'quick result'

    @agent.tool_plain
    async def slow() -> str:
        await asyncio.sleep(0.05 if how == 'raises' else 30)
        raise RuntimeError('the tool failed')

    async def run() -> list[Any]:
        with extra.capture_run_messages() as messages:
            task = asyncio.ensure_future(agent.run('hi'))
            if how == 'cancelled':
                await asyncio.sleep(0.1)
                task.cancel()
            with contextlib.suppress(RuntimeError, asyncio.CancelledError):
                await task
        return messages

    return [
        [m.kind, m.state, [(p.part_kind, getattr(p, 'content', None)) for p in m.parts]] for m in asyncio.run(run())[1:]
    ]


def test_capture_keeps_the_interrupted_request_of_a_step_that_stopped() -> None:
    for how in ('raises', 'cancelled'):
        ref, ours = (_captured_when_a_step_stops(name, how) for name in LIBS)
        assert ours == ref
        assert ours[-1] == ['request', 'interrupted', [('tool-return', 'quick result')]]


def _new_after_rewrite(name: str, how: str) -> list[Any]:
    import asyncio

    lib, extra = library(name), _extras(name)
    first = lib.Agent(lib.TestModel()).run_sync('one')

    def rewrite(messages: list[Any]) -> list[Any]:
        if how == 'keep-last':
            return messages[-1:]
        run_id = 'someone-else' if how == 'foreign' else None
        return [dataclasses.replace(m, run_id=run_id) for m in messages]

    agent = lib.Agent(lib.TestModel(), capabilities=[extra.ProcessHistory(rewrite)])
    result = asyncio.run(agent.run('two', message_history=first.all_messages()))
    new = [(m.kind, [p.part_kind for p in m.parts], m.run_id == result.run_id) for m in result.new_messages()]
    return [len(result.all_messages()), new, [m.run_id for m in result.all_messages()].count('someone-else')]


@pytest.mark.parametrize('how', ['foreign', 'cleared', 'keep-last'])
def test_new_messages_after_a_processor_rewrote_every_run_id(how: str) -> None:
    ref, ours = (_new_after_rewrite(name, how) for name in ('ref', 'ours'))
    assert ours == ref
