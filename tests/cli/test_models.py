"""Which model a CLI turn runs on: -m, else the conversation's own, else the user's default; and
a conversation whose history fails its seal is not continued unless --force."""

from __future__ import annotations

import json
import sqlite3
import stat
from pathlib import Path

import pytest

from threadline.cli import main
from threadline.storage import SQLiteStore


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv('THREADLINE_HOME', str(tmp_path / 'home'))
    return tmp_path / 'home'


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def providers(db: Path, cid: str) -> list[str | None]:
    stored = SQLiteStore(db).sync.load(cid, scope='me')
    return [m.provider_name for m in stored.messages if m.kind == 'response']


def test_continuing_keeps_the_model_the_conversation_started_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, base = tmp_path / 'm.db', ('--db', str(tmp_path / 'm.db'), '--scope', 'me')
    assert run(capsys, 'prompt', '-m', 'test', 'hello', '--cid', 'c1', *base)[0] == 0
    assert run(capsys, 'prompt', '-c', 'again', *base)[0] == 0  # no -m: the conversation's own
    assert run(capsys, 'prompt', '--cid', 'c1', 'and again', *base)[0] == 0
    assert set(providers(db, 'c1')) == {'test'}  # never the offline demo agent
    assert run(capsys, 'prompt', '--cid', 'c1', '-m', 'demo', 'now the demo', *base)[0] == 0
    assert providers(db, 'c1')[-1] == 'threadline-demo'  # -m still says otherwise


def test_the_default_model_is_a_setting_kept_for_the_user_only(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, 'models', 'default')[1] == 'demo\n'
    code, out, err = run(capsys, 'models', 'default', 'test')
    assert code == 0 and out == '' and 'default model: test' in err  # notes on stderr
    config = home / 'config.json'
    assert json.loads(config.read_text()) == {'default_model': 'test'}
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    code, out, _ = run(capsys, 'models')
    assert code == 0 and '* test' in out and '  openai:gpt-5.2' in out
    db = tmp_path / 'd.db'
    assert run(capsys, 'prompt', 'hi', '--cid', 'fresh', '--db', str(db), '--scope', 'me')[0] == 0
    assert providers(db, 'fresh') == ['test']
    code, _, err = run(capsys, 'prompt', 'hi', '--cid', 'new', '--db', str(db), '--scope', 'me')
    assert code == 2 and "--cid 'new' is reserved" in err  # an Agent would store it under a fresh id
    code, _, err = run(capsys, 'models', 'default', 'gpt-5.2')
    assert code == 1 and "'gpt-5.2' is not a model" in err
    assert json.loads(config.read_text()) == {'default_model': 'test'}  # a refused name changes nothing


def test_a_conversation_that_fails_its_seal_is_not_continued_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, base = tmp_path / 't.db', ('--db', str(tmp_path / 't.db'), '--scope', 'me')
    assert run(capsys, 'prompt', '-m', 'test', 'hello', '--cid', 'c1', *base)[0] == 0
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE messages SET body = replace(body, 'hello', 'HACKED') WHERE position = 0")
    for how in (('--cid', 'c1'), ('-c',)):
        code, out, err = run(capsys, 'prompt', 'go on', *how, *base)
        assert code == 1 and out == '' and 'hash chain' in err and '--force' in err
    assert SQLiteStore(db).sync.load('c1', scope='me').length == 2  # nothing was run or stored
    code, out, err = run(capsys, 'prompt', 'go on', '--cid', 'c1', '--force', *base)
    assert code == 0 and 'hash chain' in err  # forced: it still says so


def test_the_model_is_found_behind_a_tail_of_requests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The last response is looked for in the last messages first; one further back still names
    the model (a history that ends in many requests, appended by a client)."""
    from threadline.cli._models import model_of_conversation
    from threadline.messages import ModelRequest, UserPromptPart

    db, base = tmp_path / 'm.db', ('--db', str(tmp_path / 'm.db'), '--scope', 'me')
    assert run(capsys, 'prompt', '-m', 'test', 'hello', '--cid', 'c1', *base)[0] == 0
    store = SQLiteStore(db)
    assert model_of_conversation(store, 'c1', 'me') == 'test'
    store.sync.append('c1', [ModelRequest(parts=[UserPromptPart(f'note {i}')]) for i in range(40)], scope='me')
    assert model_of_conversation(store, 'c1', 'me') == 'test'
    store.close()
