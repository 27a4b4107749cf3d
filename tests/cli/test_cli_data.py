"""The CLI never loses or duplicates data: concurrent chats, repeated imports, backups, damaged or
tampered conversations, missing or read-only databases, model errors, and audit exit codes."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import run
from threadline.messages import ModelMessagesTypeAdapter, ModelRequest, SystemPromptPart, UserPromptPart
from threadline.storage import SQLiteStore
from threadline.storage.testing import turn

ROOT = Path(__file__).resolve().parents[2]


def user_prompts(db: Path, cid: str) -> list[str]:
    store = SQLiteStore(db)
    messages = store.sync.load(cid, scope='me').messages
    store.close()
    return [
        p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)
    ]


def start_chat(db: Path, cid: str) -> subprocess.Popen[str]:
    command = [
        sys.executable,
        '-m',
        'threadline.cli',
        'chat',
        '-m',
        'demo',
        '--cid',
        cid,
        '--db',
        str(db),
        '--scope',
        'me',
    ]
    env = {**os.environ, 'PYTHONPATH': str(ROOT / 'src'), 'COLUMNS': '200'}
    return subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, bufsize=1
    )


def say(chat: subprocess.Popen[str], line: str) -> str:
    assert chat.stdin is not None and chat.stdout is not None
    chat.stdin.write(line + '\n')
    chat.stdin.flush()
    out = ''
    while 'assistant>' not in out:
        line = chat.stdout.readline()
        if not line:  # the session ended: fail with what it said instead of waiting forever
            chat.wait(timeout=30)
            raise AssertionError(f'the chat session ended (exit {chat.returncode}): {out!r} {chat.stderr.read()!r}')
        out += line
    return out


def test_two_chat_sessions_on_one_conversation_store_each_turn_once(tmp_path: Path) -> None:
    db, cid = tmp_path / 'chat.db', 'shared-chat'
    first, second = start_chat(db, cid), start_chat(db, cid)
    try:
        for chat, line in (
            (first, 'hello from one'),
            (second, 'hello from two'),
            (first, 'again one'),
            (second, 'again two'),
        ):
            say(chat, line)
    finally:
        for chat in (first, second):
            chat.communicate('/quit\n', timeout=30)
    assert user_prompts(db, cid) == ['hello from one', 'hello from two', 'again one', 'again two']
    store = SQLiteStore(db)
    messages = store.sync.load(cid, scope='me').messages
    store.close()
    assert sum(isinstance(p, SystemPromptPart) for m in messages for p in m.parts) == 1


def test_import_is_idempotent_and_refuses_a_diverging_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / 'i.db')
    path = tmp_path / 'h.json'
    path.write_bytes(ModelMessagesTypeAdapter.dump_json(turn(0, conversation_id='imp')))
    for _ in range(2):
        code, out, _ = run(capsys, 'conversations', 'import', str(path), '--db', db, '--scope', 'me')
        assert code == 0 and out.strip() == 'imp'
    assert SQLiteStore(db).sync.load('imp', scope='me').length == 4  # not 8
    path.write_bytes(
        ModelMessagesTypeAdapter.dump_json(turn(0, conversation_id='imp') + turn(1, conversation_id='imp'))
    )
    assert run(capsys, 'conversations', 'import', str(path), '--db', db, '--scope', 'me')[0] == 0
    assert SQLiteStore(db).sync.load('imp', scope='me').length == 8  # only the new tail was added
    path.write_bytes(ModelMessagesTypeAdapter.dump_json(turn(5, conversation_id='imp')))
    code, _, err = run(capsys, 'conversations', 'import', str(path), '--db', db, '--scope', 'me')
    assert code == 1 and '--as-new' in err and '--replace' in err
    code, out, _ = run(capsys, 'conversations', 'import', str(path), '--as-new', '--db', db, '--scope', 'me')
    assert code == 0 and out.strip() != 'imp'
    assert run(capsys, 'conversations', 'import', str(path), '--replace', '--db', db, '--scope', 'me')[0] == 0
    assert SQLiteStore(db).sync.load('imp', scope='me').messages == turn(5, conversation_id='imp')


def test_backup_never_overwrites_and_leaves_nothing_behind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / 'src.db'
    store = SQLiteStore(db)
    store.sync.append('c', turn(0, conversation_id='c'), scope='me')
    store.close()
    other = tmp_path / 'other.db'
    other.write_bytes(b'precious')
    code, _, err = run(capsys, 'db', 'backup', str(other), '--db', str(db))
    assert code == 1 and err.startswith('error:') and other.read_bytes() == b'precious'
    code, _, err = run(capsys, 'db', 'backup', str(tmp_path / 'no-such-dir' / 'x.db'), '--db', str(db))
    assert code == 1 and err.count('\n') == 1
    damaged = tmp_path / 'damaged.db'
    damaged.write_bytes(db.read_bytes()[:4096] + b'\x00garbage' * 500)
    code, _, err = run(capsys, 'db', 'backup', str(tmp_path / 'copy.db'), '--db', str(damaged))
    assert code == 1 and 'Traceback' not in err and not (tmp_path / 'copy.db').exists()
    assert sorted(p.name for p in tmp_path.iterdir() if 'partial' in p.name) == []
    assert run(capsys, 'db', 'backup', str(tmp_path / 'good.db'), '--db', str(db))[0] == 0
    assert SQLiteStore(tmp_path / 'good.db').sync.load('c', scope='me').length == 4


def tamper(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE messages SET body = replace(body, 'hello', 'HACKED') WHERE position = 0")


def test_a_damaged_or_tampered_conversation_is_not_passed_on_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / 't.db'
    store = SQLiteStore(db)
    store.sync.append('c', turn(0, conversation_id='c'), scope='me')
    store.close()
    tamper(db)
    code, _, err = run(capsys, 'conversations', 'show', 'c', '--db', str(db), '--scope', 'me')
    assert code == 0 and 'hash chain' in err
    for command in ('export', 'fork'):
        code, out, err = run(capsys, 'conversations', command, 'c', '--db', str(db), '--scope', 'me')
        assert code == 1 and '--force' in err and out == ''
        assert run(capsys, 'conversations', command, 'c', '--force', '--db', str(db), '--scope', 'me')[0] == 0
    with sqlite3.connect(db) as conn:
        conn.execute('UPDATE messages SET body = \'{"kind": "request", "parts": [\' WHERE position = 1')
    code, out, err = run(capsys, 'conversations', 'export', 'c', '--force', '--db', str(db), '--scope', 'me')
    assert code == 1 and ('damaged' in err or 'not valid JSON' in err) and out == ''


def test_a_conversation_sealed_with_another_key_is_not_called_tampered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / 't.db'
    store = SQLiteStore(db)
    store.sync.append('c', turn(0, conversation_id='c'), scope='me')
    store.close()
    monkeypatch.setenv('THREADLINE_HOME', str(tmp_path / 'another-machine'))
    code, _, err = run(capsys, 'conversations', 'show', 'c', '--db', str(db), '--scope', 'me')
    assert code == 0 and 'cannot be checked here' in err and 'THREADLINE_HOME' in err and 'changed' not in err
    assert not (tmp_path / 'another-machine').exists()  # a read command creates no key


def test_reading_a_missing_database_creates_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / 'nowhere' / 'x.db'
    for args in (
        ['conversations', 'list'],
        ['conversations', 'show', 'c'],
        ['conversations', 'search', 'q'],
        ['conversations', 'export', 'c'],
        ['db', 'status'],
        ['conversations', 'delete', 'c'],
    ):
        code, _, err = run(capsys, *args, '--db', str(missing), '--scope', 'me')
        assert code == 1 and 'no database' in err, args
    assert not missing.parent.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason='root ignores directory permissions, so the directory stays writable')
def test_a_database_in_a_read_only_directory_can_be_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / 'ro'
    folder.mkdir()
    store = SQLiteStore(folder / 'r.db')
    store.sync.append('c', turn(0, conversation_id='c'), scope='me')
    store.close()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        code, out, _ = run(capsys, 'conversations', 'list', '--json', '--db', str(folder / 'r.db'), '--scope', 'me')
        assert code == 0 and json.loads(out)[0]['conversation_id'] == 'c'
    finally:
        folder.chmod(stat.S_IRWXU)


def test_a_read_only_database_file_can_be_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / 'r.db'
    store = SQLiteStore(db)
    store.sync.append('c', turn(0, conversation_id='c'), scope='me')
    store.close()
    for extra in tmp_path.glob('r.db-*'):
        extra.unlink()
    code, out, _ = run(capsys, 'conversations', 'list', '--json', '--db', f'{db}', '--scope', 'me')
    assert code == 0 and json.loads(out)[0]['conversation_id'] == 'c'


def test_audit_exit_codes_gate_a_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from threadline.audit.cases import SYSTEM_PROMPT, build_cases

    db = tmp_path / 'a.db'
    store = SQLiteStore(db)
    cases = build_cases(store)
    store.close()
    prompt = tmp_path / 'prompt.txt'
    prompt.write_text(SYSTEM_PROMPT + '\n')  # as an editor saves it
    codes = {}
    for case in cases:
        cid, scope = case.context.conversation_id, case.context.scope
        if case.context.source != 'store' or cid is None or scope is None:
            continue
        args = ('audit', cid, '--prompt-file', str(prompt), '--json', '--db', str(db), '--scope', scope)
        code, out, _ = run(capsys, *args)
        codes[json.loads(out)['verdict']] = code
    assert codes.get('READY') == 0
    assert all(code != 0 for verdict, code in codes.items() if verdict != 'READY')
    assert len(set(codes.values())) == len(codes)  # one code per verdict class


def test_import_and_audit_of_an_endless_file_stop_at_the_input_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from threadline.cli import main

    monkeypatch.setenv('THREADLINE_MAX_INPUT_MB', '2')
    db = str(tmp_path / 'limit.db')
    for args in (['conversations', 'import', '/dev/zero'], ['audit', '/dev/zero']):
        code = main([*args, '--db', db])
        err = capsys.readouterr().err
        assert code == 1 and 'over 2 MB' in err and 'THREADLINE_MAX_INPUT_MB' in err, (args, err)


def test_a_recorded_restore_verifies_and_an_unrecorded_one_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from threadline.cli import main

    db = tmp_path / 'live.db'
    store = SQLiteStore(db)
    store.sync.append('c', turn(0, conversation_id='c'), scope='s')
    store.close()
    assert main(['db', 'backup', str(tmp_path / 'b.db'), '--db', str(db)]) == 0
    store = SQLiteStore(db)
    store.sync.append('c', turn(1, conversation_id='c'), scope='s')
    store.close()
    # Copied over by hand: the tip book saw a newer seal, so this rollback is reported.
    shutil.copy(tmp_path / 'b.db', db)
    for suffix in ('-wal', '-shm'):
        Path(str(db) + suffix).unlink(missing_ok=True)
    check = SQLiteStore(db).sync.verify('c', scope='s')
    assert not check.ok and check.tip == 'truncated'
    capsys.readouterr()
    # Restored with the command: recorded, so the older copy verifies from now on.
    assert main(['db', 'restore', str(tmp_path / 'b.db'), '--db', str(db), '--yes']) == 0
    assert 'recorded in the tip book' in capsys.readouterr().out
    restored = SQLiteStore(db)
    assert restored.sync.verify('c', scope='s').ok and restored.sync.load('c', scope='s').length == 4
    restored.sync.append('c', turn(1, conversation_id='c'), scope='s')  # and it goes on sealing
    assert restored.sync.verify('c', scope='s').ok
    other = tmp_path / 'other.db'
    SQLiteStore(other).close()
    assert main(['db', 'restore', str(other), '--db', str(db), '--yes']) == 1
    assert 'another store' in capsys.readouterr().err


def test_audit_refuses_a_database_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / 'typo.db'
    code, _, err = run(capsys, 'audit', 'conv-a', '--db', str(missing), '--scope', 'me')
    assert code == 1 and 'no database at' in err
    assert not missing.exists()  # not created empty


def test_a_conversation_that_keeps_changing_is_an_error_not_an_empty_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import click

    from threadline import Agent
    from threadline.cli._chat import _Session
    from threadline.exceptions import ConflictError
    from threadline.models.demo import DemoModel
    from threadline.storage import SQLiteStore

    store = SQLiteStore(tmp_path / 'busy.db')

    def always_beaten(*args: object, **kwargs: object) -> int:
        raise ConflictError('another session wrote first')

    monkeypatch.setattr(store.sync, 'save', always_beaten)
    session = _Session(store, 'me', 'busy', persists_steps=False, settings=None)
    with pytest.raises(click.ClickException, match='keeps changing'):
        session.turn(Agent(DemoModel()), 'hello')
