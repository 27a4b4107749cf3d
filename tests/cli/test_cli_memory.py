"""`threadline memory show|edit|clear`: what a person does with a user's notebook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from threadline.cli import main
from threadline.storage import SQLiteStore


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out + err


def test_show_edit_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / 'm.db')
    store = SQLiteStore(db)
    store.sync.write_notebook('alice', '## seat\nwindow\n', scope='acme', expected_version=0)
    store.sync.write_notebook('alice', '## theirs\nsecret\n', scope='globex', expected_version=0)
    store.close()
    code, out = run(capsys, 'memory', 'show', 'alice', '--db', db, '--scope', 'acme')
    assert code == 0 and '## seat\nwindow' in out and 'secret' not in out and 'version 1' in out
    code, out = run(capsys, 'memory', 'show', 'alice', '--db', db, '--scope', 'acme', '--json')
    shown = json.loads(out)
    assert (shown['version'], shown['content']) == (1, '## seat\nwindow\n') and shown['updated_at'].endswith('Z')
    monkeypatch.setenv('EDITOR', 'sed -i s/window/aisle/')
    code, out = run(capsys, 'memory', 'edit', 'alice', '--db', db, '--scope', 'acme')
    assert code == 0 and 'saved (version 2)' in out
    notebook = SQLiteStore(db).sync.read_notebook('alice', scope='acme')
    assert notebook is not None and notebook.content == '## seat\naisle\n'
    code, out = run(capsys, 'memory', 'clear', 'alice', '--yes', '--db', db, '--scope', 'acme')
    assert code == 0 and 'erased' in out
    code, out = run(capsys, 'memory', 'show', 'alice', '--db', db, '--scope', 'acme')
    assert 'no notebook' in out and code == 1
    code, out = run(capsys, 'memory', 'show', 'alice', '--db', db, '--scope', 'acme', '--json')
    assert out.strip() == 'null' and code == 1
    assert SQLiteStore(db).sync.read_notebook('alice', scope='globex') is not None  # another scope's stays
