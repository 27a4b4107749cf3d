"""`MemoryTool` under concurrent writers, planted links and hostile paths, and the key spaces that
keep its notes and `Memory`'s apart."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from threadline.exceptions import ModelRetry
from threadline.memory import Memory
from threadline.memory.anthropic import MemoryTool, _in_directory
from threadline.storage import FileStore, MemoryStore, SQLiteStore


def test_concurrent_edits_in_a_directory_all_land(tmp_path: Path) -> None:
    directory = tmp_path / 'mem'
    _in_directory(directory, 'create', {'path': '/memories/log.md', 'file_text': ''})
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        for j in range(20):
            try:
                _in_directory(
                    directory, 'insert', {'path': '/memories/log.md', 'insert_line': 0, 'insert_text': f'{k}-{j}'}
                )
            except BaseException as exc:  # noqa: BLE001 - the test reports every one
                errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = set((directory / 'log.md').read_text().split('\n')) - {''}
    assert errors == [] and lines == {f'{k}-{j}' for k in range(8) for j in range(20)}  # 160 acknowledged, 160 kept
    assert sorted(p.name for p in directory.iterdir()) == ['log.md']  # no temporary file left behind


def test_a_link_planted_at_a_temporary_name_is_never_written_through(tmp_path: Path) -> None:
    directory, outside = tmp_path / 'mem', tmp_path / 'outside.txt'
    directory.mkdir()
    outside.write_text('untouched')
    for name in ('.notes.md.tmp', '.threadline-memory-x', '.notes.md.swp'):
        os.symlink(outside, directory / name)
    _in_directory(directory, 'create', {'path': '/memories/notes.md', 'file_text': 'hello'})
    assert outside.read_text() == 'untouched' and (directory / 'notes.md').read_text() == 'hello'


@pytest.mark.parametrize(
    ('command', 'args', 'says'),
    [
        ('create', {'path': '/memories/' + 'n' * 300, 'file_text': 'x'}, '255 bytes'),
        ('create', {'path': '/memories/' + '/'.join(['d'] * 3000), 'file_text': 'x'}, 'characters'),
        ('create', {'path': '/memories/' + '/'.join(['d'] * 40), 'file_text': 'x'}, 'levels'),
        ('create', {'path': '/memories/a.md/b.md', 'file_text': 'x'}, 'is a file'),
        ('rename', {'old_path': '/memories/dir', 'new_path': '/memories/dir/inner'}, 'into itself'),
        ('create', {'path': '/memories/a\nb', 'file_text': 'x'}, 'control characters'),
    ],
)
def test_a_hostile_path_is_a_tool_error_on_both_backends(
    command: str, args: dict[str, Any], says: str, tmp_path: Path
) -> None:
    directory = tmp_path / 'mem'
    _in_directory(directory, 'create', {'path': '/memories/a.md', 'file_text': 'a'})
    _in_directory(directory, 'create', {'path': '/memories/dir/f.md', 'file_text': 'f'})
    with pytest.raises(ModelRetry, match=says):
        _in_directory(directory, command, args)
    tool = MemoryTool(MemoryStore(), scope='s', namespace='n')
    for k, (path, text) in enumerate((('/memories/a.md', 'a'), ('/memories/dir/f.md', 'f'))):
        call: Any = SimpleNamespace(run_id='r', tool_call_id=f'c{k}', deps=None)
        tool._in_notebook(call, 'create', {'path': path, 'file_text': text})
    ctx: Any = SimpleNamespace(run_id='r', tool_call_id='c-last', deps=None)
    with pytest.raises(ModelRetry, match=says):
        tool._in_notebook(ctx, command, args)


def test_an_os_error_is_a_tool_error_not_a_crash(tmp_path: Path) -> None:
    directory = tmp_path / 'mem'
    _in_directory(directory, 'create', {'path': '/memories/a.md', 'file_text': 'a'})
    (directory / 'a.md').chmod(0o000)
    (directory / 'sub').mkdir()
    (directory / 'sub' / 'x.md').write_text('x')
    os.chmod(directory / 'sub', 0o500)
    try:
        if os.geteuid() != 0:
            with pytest.raises(ModelRetry, match='failed'):
                _in_directory(directory, 'create', {'path': '/memories/sub/y.md', 'file_text': 'y'})
        # whatever the file system says (a name too long for it, say), the run goes on
        with pytest.raises(ModelRetry):
            _in_directory(directory, 'rename', {'old_path': '/memories/sub', 'new_path': '/memories/' + 'é' * 200})
    finally:
        os.chmod(directory / 'sub', 0o700)
        (directory / 'a.md').chmod(0o600)


@pytest.mark.parametrize('backend', ['sqlite', 'file'])
async def test_memory_and_the_memory_tool_never_read_each_others_notes(backend: str, tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / 'n.db') if backend == 'sqlite' else FileStore(tmp_path / 'files')
    tool = MemoryTool(store, scope='s', namespace='alice')
    ctx: Any = SimpleNamespace(run_id='r', tool_call_id='c', deps=None)
    tool._in_notebook(ctx, 'create', {'path': '/memories/secret.md', 'file_text': 'tool secret'})
    for name in ('alice/memories', 'alice', 'memory-tool/alice', 'memory-toolalice'):
        notebook = await store.read_notebook(name, scope='s')
        assert notebook is None or 'tool secret' not in notebook.content, name
    with pytest.raises(Exception, match='control characters'):
        memory = Memory(store, scope='s', namespace='memory-tool\x1falice')
        await memory.before_run(SimpleNamespace(run_id='r', deps=None))  # type: ignore[arg-type]


def test_crafted_scopes_never_share_a_file_store_notebook(tmp_path: Path) -> None:
    store = FileStore(tmp_path / 'files').sync
    store.write_notebook('c', 'tenant A', scope='a\x00b', expected_version=0)
    store.write_notebook('b\x00c', 'tenant B', scope='a', expected_version=0)
    first, second = store.read_notebook('c', scope='a\x00b'), store.read_notebook('b\x00c', scope='a')
    assert first is not None and first.content == 'tenant A'
    assert second is not None and second.content == 'tenant B'
    files = list((tmp_path / 'files' / 'notebooks').glob('*.json'))
    assert len(files) == 2 and {json.loads(f.read_text())['content'] for f in files} == {'tenant A', 'tenant B'}
