"""Anthropic's `memory` tool (`MemoryTool`): the provider-defined tool on the wire, its commands on
both backends, and every way a path could escape `/memories`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.models.providers.conftest import anthropic_model, openai_model
from tests.models.providers.server import ProviderServer, fixture
from threadline import Agent
from threadline.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from threadline.models.anthropic import MemoryTool
from threadline.models.function import AgentInfo, FunctionModel
from threadline.storage import SQLiteStore


@dataclass
class Deps:
    user: str


def run_commands(tool: MemoryTool, commands: list[dict[str, Any]], user: str = 'alice') -> list[str]:
    """Each command as one `memory` call of its own response; what the model read back for each
    (an error as `ERROR: ...`)."""
    calls = iter(commands)

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        command = next(calls, None)
        if command is None:
            return ModelResponse(parts=[TextPart('done')])
        return ModelResponse(parts=[ToolCallPart('memory', command)])

    agent = Agent(FunctionModel(model), capabilities=[tool], deps_type=Deps, retries=len(commands) + 1)
    result = agent.run_sync('remember', deps=Deps(user))
    answers = []
    for message in result.all_messages():
        for part in getattr(message, 'parts', []):
            if isinstance(part, ToolReturnPart):
                failed = part.outcome in ('failed', 'retried')
                answers.append(f'ERROR: {part.content}' if failed else str(part.content))
            elif isinstance(part, RetryPromptPart):
                answers.append(f'ERROR: {part.content}')
    return answers


def backends(tmp_path: Path) -> list[MemoryTool]:
    store = SQLiteStore(tmp_path / 'memory.db')
    return [
        MemoryTool(directory=tmp_path / 'memories'),
        MemoryTool(store, scope='tenant-1', namespace=lambda ctx: ctx.deps.user),
    ]


@pytest.mark.parametrize('backend', [0, 1], ids=['directory', 'store'])
def test_the_commands_of_the_contract(tmp_path: Path, backend: int) -> None:
    tool = backends(tmp_path)[backend]
    answers = run_commands(
        tool,
        [
            {'command': 'create', 'path': '/memories/prefs.md', 'file_text': 'likes tea\nlives in Oslo'},
            {'command': 'str_replace', 'path': '/memories/prefs.md', 'old_str': 'Oslo', 'new_str': 'Bergen'},
            {'command': 'insert', 'path': '/memories/prefs.md', 'insert_line': 0, 'insert_text': '# Alice'},
            {'command': 'view', 'path': '/memories/prefs.md'},
            {'command': 'view', 'path': '/memories/prefs.md', 'view_range': [2, 2]},
            {'command': 'str_replace', 'path': '/memories/prefs.md', 'old_str': 'l', 'new_str': 'L'},
            {'command': 'rename', 'old_path': '/memories/prefs.md', 'new_path': '/memories/people/alice.md'},
            {'command': 'view', 'path': '/memories'},
            {'command': 'delete', 'path': '/memories/people'},
            {'command': 'view', 'path': '/memories/people/alice.md'},
        ],
    )
    assert answers[:3] == [
        'File created successfully at /memories/prefs.md',
        'The file /memories/prefs.md has been edited',
        'The file /memories/prefs.md has been edited',
    ]
    assert answers[3] == '     1\t# Alice\n     2\tlikes tea\n     3\tlives in Bergen'
    assert answers[4] == '     2\tlikes tea'
    assert answers[5].startswith('ERROR:') and 'appears 3 times' in answers[5]  # must be unique
    assert answers[6] == 'Renamed /memories/prefs.md to /memories/people/alice.md'
    assert answers[7].endswith('\t/memories/people/alice.md') and 'prefs.md' not in answers[7]
    assert answers[8] == 'Deleted /memories/people'
    assert answers[9].startswith('ERROR:') and 'does not exist' in answers[9]


ESCAPES = [
    '/etc/passwd',
    '/memories/../secret.txt',
    '/memories/a/../../secret.txt',
    '/memoriesX/secret.txt',
    'memories/secret.txt',
    '/memories//secret.txt',
    '/memories/./secret.txt',
    '/memories\\..\\secret.txt',
    '/memories/sec\x00ret.txt',
]


@pytest.mark.parametrize('path', ESCAPES)
def test_a_path_that_escapes_is_refused_and_nothing_is_written(tmp_path: Path, path: str) -> None:
    for tool in backends(tmp_path):
        [answer] = run_commands(tool, [{'command': 'create', 'path': path, 'file_text': 'x'}])
        assert answer.startswith('ERROR:') and repr(path) in answer, answer
    assert {p.name for p in tmp_path.iterdir() if not p.name.startswith('memory.db')} == {'memories'}
    assert list((tmp_path / 'memories').iterdir()) == []


def test_a_symbolic_link_out_of_the_directory_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / 'outside'
    outside.mkdir()
    (outside / 'secret.txt').write_text('top secret')
    root = tmp_path / 'memories'
    root.mkdir()
    os.symlink(outside, root / 'link')
    os.symlink(outside / 'secret.txt', root / 'file.md')
    tool = MemoryTool(directory=root)
    answers = run_commands(
        tool,
        [
            {'command': 'view', 'path': '/memories/link/secret.txt'},
            {'command': 'create', 'path': '/memories/link/new.txt', 'file_text': 'x'},
            {'command': 'view', 'path': '/memories/file.md'},
            {'command': 'str_replace', 'path': '/memories/file.md', 'old_str': 'top', 'new_str': 'no'},
            {'command': 'delete', 'path': '/memories/link'},
            {'command': 'view', 'path': '/memories'},
        ],
    )
    assert all(a.startswith('ERROR:') and 'symbolic link' in a for a in answers[:5]), answers
    assert 'secret' not in answers[5]  # a listing does not follow links either
    assert sorted(p.name for p in outside.iterdir()) == ['secret.txt']
    assert (outside / 'secret.txt').read_text() == 'top secret'


def test_the_store_keeps_each_users_files_apart(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'memory.db')
    tool = MemoryTool(store, scope='tenant-1', namespace=lambda ctx: ctx.deps.user)
    run_commands(tool, [{'command': 'create', 'path': '/memories/a.md', 'file_text': 'alice only'}], user='alice')
    [bob] = run_commands(tool, [{'command': 'view', 'path': '/memories'}], user='bob')
    assert bob == '/memories is empty'
    other_scope = MemoryTool(store, scope='tenant-2', namespace=lambda ctx: ctx.deps.user)
    [other] = run_commands(other_scope, [{'command': 'view', 'path': '/memories/a.md'}], user='alice')
    assert other.startswith('ERROR:')


async def test_anthropic_gets_the_provider_defined_tool(server: ProviderServer, tmp_path: Path) -> None:
    tool_use = fixture('anthropic_tool_use.json')
    block = next(b for b in tool_use['body']['content'] if b['type'] == 'tool_use')
    block['name'] = 'memory'
    block['input'] = {'command': 'create', 'path': '/memories/notes.md', 'file_text': 'user prefers metric'}
    server.queue(tool_use, fixture('anthropic_text.json'))
    agent = Agent(anthropic_model(server), capabilities=[MemoryTool(directory=tmp_path)])
    await agent.run('Remember that I prefer metric units.')

    first, second = server.requests
    assert first['body']['tools'] == [{'name': 'memory', 'type': 'memory_20250818'}]
    assert 'context-management-2025-06-27' in first['headers']['anthropic-beta']
    assert (tmp_path / 'notes.md').read_text() == 'user prefers metric'
    result = next(b for b in second['body']['messages'][-1]['content'] if b['type'] == 'tool_result')
    assert result['content'] == 'File created successfully at /memories/notes.md'


async def test_other_providers_get_a_function_tool(server: ProviderServer, tmp_path: Path) -> None:
    server.queue(fixture('openai_text.json'))
    await Agent(openai_model(server), capabilities=[MemoryTool(directory=tmp_path)]).run('hi')
    [tool] = server.bodies()[0]['tools']
    assert tool['function']['name'] == 'memory'
    assert 'anthropic-beta' not in server.requests[0]['headers']
    properties = tool['function']['parameters']['properties']
    assert properties['command']['enum'] == ['view', 'create', 'str_replace', 'insert', 'delete', 'rename']


def test_a_retried_call_applies_once(tmp_path: Path) -> None:
    from types import SimpleNamespace

    store = SQLiteStore(tmp_path / 'memory.db')
    tool = MemoryTool(store, scope='tenant-1', namespace=lambda ctx: ctx.deps.user)
    ctx: Any = SimpleNamespace(run_id='run-1', tool_call_id='call-1', deps=Deps('alice'))
    tool._in_notebook(ctx, 'create', {'path': '/memories/log.md', 'file_text': 'a'})
    insert = {'path': '/memories/log.md', 'insert_line': 1, 'insert_text': 'b'}
    retried: Any = SimpleNamespace(run_id='run-1', tool_call_id='call-2', deps=Deps('alice'))
    for _ in range(2):  # the same tool call delivered twice (a retry after a lost answer)
        tool._in_notebook(retried, 'insert', insert)
    notebook = store.sync.read_notebook('memory-tool\x1falice', scope='tenant-1')
    assert notebook is not None and '"log.md": "a\\nb"' in notebook.content
