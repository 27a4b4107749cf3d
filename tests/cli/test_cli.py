"""The `threadline` command: the demo end to end, the conversation tools, errors, and chat in a pty."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from threadline.cli import main
from threadline.messages import ModelMessagesTypeAdapter
from threadline.storage import SQLiteStore
from threadline.storage.testing import turn

UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}')
TIME = re.compile(r'\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?')


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def normalize(text: str) -> str:
    return TIME.sub('<time>', UUID.sub('<id>', text))


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / 'cli.db'
    store = SQLiteStore(path)
    store.sync.append('conv-a', turn(0, conversation_id='conv-a', text='refund'), scope='me')
    store.sync.append('conv-b', turn(1, conversation_id='conv-b', text='weather'), scope='me')
    store.sync.append('conv-c', turn(2, conversation_id='conv-c'), scope='someone-else')
    store.close()
    return str(path)


def test_demo_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, 'demo', '--db', str(tmp_path / 'demo.db'))
    assert code == 0, err
    for expected in (
        'INTERRUPTED_TOOL',
        'unknown after the crash',
        "'refund-42'",
        'refund found',
        'audit verdict: READY',
        'UNTRUSTED_HISTORY',
        'SYSTEM_PROMPT_GAP',
        'Done',
    ):
        assert expected in out, expected
    assert out.count('READY') >= 4


def test_list_show_search_json(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, 'conversations', 'list', '--db', db, '--scope', 'me', '--json')
    assert code == 0
    rows = json.loads(out)
    assert [r['conversation_id'] for r in rows] == ['conv-b', 'conv-a'] and rows[0]['message_count'] == 4
    code, out, err = run(capsys, 'conversations', '-n', '1', '-s', '--db', db, '--scope', 'me')  # on the group
    assert (code, out) == (0, 'conv-b  weather question 1\n') and '1 of 2' in err
    code, out, _ = run(capsys, 'conversations', 'show', 'conv-a', '--db', db, '--scope', 'me')
    assert normalize(out).splitlines() == [
        'conv-a  revision 1  4 messages',
        '     0 request  user-prompt',
        '       refund question 0',
        '     1 response tool-call',
        '       lookup({"n":0})',
        '     2 request  tool-return',
        '       lookup [success]',
        '       result 0',
        '     3 response text',
        '       answer 0 about zebra0',
    ]
    code, out, _ = run(capsys, 'conversations', 'show', 'conv-a', '--short', '--db', db, '--scope', 'me')
    assert normalize(out).splitlines() == [
        'conv-a  revision 1  4 messages',
        '     0 request  user-prompt    refund question 0',
        '     1 response tool-call      lookup({"n":0})',
        '     2 request  tool-return    lookup -> result 0 [success]',
        '     3 response text           answer 0 about zebra0',
    ]
    code, out, _ = run(capsys, 'conversations', 'show', 'conv-a', '--db', db, '--scope', 'me', '--json')
    assert len(ModelMessagesTypeAdapter.validate_json(out)) == 4
    code, out, _ = run(capsys, 'conversations', 'search', 'zebra1', '--db', db, '--scope', 'me')
    assert out == "conv-b #3  1.00  'answer 1 about [zebra1]'\n" or out.startswith('conv-b #3')


def test_fork_export_import_delete_prune(db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, fork_id, _ = run(capsys, 'conversations', 'fork', 'conv-a', '--at', '2', '--db', db, '--scope', 'me')
    assert code == 0 and UUID.fullmatch(fork_id.strip())
    code, exported, _ = run(capsys, 'conversations', 'export', 'conv-a', '--db', db, '--scope', 'me')
    path = tmp_path / 'history.json'
    path.write_text(exported)
    code, imported, _ = run(
        capsys, 'conversations', 'import', str(path), '--cid', 'imported', '--db', db, '--scope', 'me'
    )
    assert (code, imported) == (0, 'imported\n')
    store = SQLiteStore(db)
    assert [b.provenance for b in store.sync.load('imported', scope='me').batches] == ['client']
    code, out, _ = run(capsys, 'audit', 'imported', '--db', db, '--scope', 'me', '--dynamic', '--json')
    assert json.loads(out)['verdict'] == 'UNTRUSTED_HISTORY'
    code, out, _ = run(capsys, 'conversations', 'delete', 'conv-b', '--db', db, '--scope', 'me')
    assert out == 'deleted conv-b\n'
    code, out, _ = run(capsys, 'conversations', 'prune', '--keep-last', '1', '--db', db, '--scope', 'me')
    assert out == 'deleted 2 conversation(s)\n'
    assert [c.conversation_id for c in store.sync.list('someone-else')] == ['conv-c']  # other scopes untouched


def test_audit_a_file_and_db_commands(db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / 'client.json'
    path.write_bytes(ModelMessagesTypeAdapter.dump_json(turn(0)))
    code, out, _ = run(capsys, 'audit', str(path), '--db', db, '--scope', 'me', '--dynamic')
    assert code == 17 and 'verdict: UNTRUSTED_HISTORY' in out  # a documented exit code per verdict
    code, out, _ = run(capsys, 'db', 'path', '--db', db)
    assert out.strip() == db
    code, out, _ = run(capsys, 'db', 'status', '--db', db, '--scope', 'me')
    assert 'migrations: 18 applied (latest: seals_by_key)' in out and '2 conversations, 8 messages' in out
    assert 'store key: install-' in out and 'store-keys.json' in out
    code, out, _ = run(capsys, 'db', 'status', '--db', db, '--scope', 'someone-else')
    assert '1 conversation, 4 messages' in out  # one, not "1 conversations"
    code, out, _ = run(capsys, 'db', 'backup', str(tmp_path / 'copy.db'), '--db', db)
    assert code == 0 and SQLiteStore(tmp_path / 'copy.db').sync.load('conv-a', scope='me').length == 4


@pytest.mark.parametrize(
    ('args', 'message'),
    [
        (('conversations', 'show', 'missing'), "error: conversation 'missing' not found in scope 'me'"),
        (('conversations', 'show', 'conv-c'), "error: conversation 'conv-c' not found in scope 'me'"),
        (('conversations', 'prune', '--older-than', 'soon'), 'error: --older-than'),
        (('conversations', 'import', '/no/such/file.json'), 'error: cannot read /no/such/file.json'),
        (('chat', '-m', 'nope:gpt-5.2'), "error: -m 'nope:gpt-5.2': not a model; use -m demo"),
        (('prompt', '-m', 'gpt-5.2', 'hi'), "error: -m 'gpt-5.2': not a model; name its provider: -m openai:gpt-5.2"),
        (
            ('prompt', '-m', 'claude-sonnet-4-6', 'hi'),
            "error: -m 'claude-sonnet-4-6': not a model; name its provider: -m anthropic:",
        ),
    ],
)
def test_errors_are_one_line_and_exit_1(
    db: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    code, _, err = run(capsys, *args, '--db', db, '--scope', 'me')
    assert code == 1
    assert err.startswith(message) and err.count('\n') == 1 and 'Traceback' not in err


def test_bad_file_and_corrupt_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / 'bad.json'
    bad.write_text('[{"kind": "request", "parts": [{"part_kind": "tool-return"}]}]')
    db = str(tmp_path / 'x.db')
    code, _, err = run(capsys, 'conversations', 'import', str(bad), '--db', db)
    assert code == 1 and err == 'error: messages[0].parts[0].tool_name: field required\n'
    junk = tmp_path / 'junk.db'
    junk.write_bytes(b'not a database at all' * 50)
    code, _, err = run(capsys, 'conversations', 'list', '--db', str(junk))
    assert code == 1 and 'damaged' in err and err.count('\n') == 1


def _read_until(fd: int, marker: bytes, timeout: float = 20.0) -> bytes:
    seen = b''
    deadline = time.monotonic() + timeout
    while marker not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    return seen


def spawn(args: list[str], **env: str) -> tuple[subprocess.Popen[bytes], int]:
    """`threadline args` on a pseudo-terminal (stdin, stdout and stderr): the process, and the
    terminal's end to read and type on."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, '-m', 'threadline', *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**os.environ, 'COLUMNS': '200', **env},
    )
    os.close(follower)
    return process, leader


def test_chat_in_a_pseudo_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / 'chat.db')
    process, leader = spawn(['chat', '-m', 'demo', '--db', db, '--scope', 'me', '--cid', 'chat-1'])
    try:
        assert b'you> ' in _read_until(leader, b'you> ')
        os.write(leader, b'Where is order 42?\n')
        answer = _read_until(leader, b'you> ')
        assert b'order 42 shipped' in answer
        os.write(leader, b'thanks\n')
        assert b'You are welcome' in _read_until(leader, b'you> ')
        os.write(leader, b'/quit\n')
        assert b'saved as chat-1' in _read_until(leader, b'saved as')
        assert process.wait(timeout=20) == 0
    finally:
        process.kill()
        os.close(leader)
    _, out, _ = run(capsys, 'conversations', 'show', 'chat-1', '--db', db, '--scope', 'me')
    assert 'Where is order 42?' in out and 'You are welcome' in out


@pytest.mark.parametrize('where', ['option', 'environment'])
def test_an_empty_scope_is_refused_not_replaced_by_the_default(
    db: str, where: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ['conversations', 'list', '--db', db]
    if where == 'option':
        args += ['--scope', '']
    else:
        monkeypatch.setenv('THREADLINE_SCOPE', '')
    code, out, err = run(capsys, *args)
    assert code != 0 and 'conv-' not in out
    assert err.startswith('Usage: threadline') and 'Traceback' not in err  # a usage error says how to call it
    assert err.splitlines()[-1].startswith('error: --scope (or THREADLINE_SCOPE) must not be empty')


def test_version_help_and_the_database_option_at_every_level(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    for flag in ('--version', '-V'):
        code, out, _ = run(capsys, flag)
        assert (code, out.strip()) == (0, f'threadline {version("threadline")}')
    code, out, _ = run(capsys)  # no command: the help, exit 0
    assert code == 0 and 'Usage: threadline' in out and 'conversations' in out
    listings = [
        ('-d', db, 'conversations', 'list'),
        ('--database', db, 'conversations', 'list'),
        ('conversations', '--db', db, 'list'),
        ('conversations', '-d', db, 'list'),
        ('conversations', 'list', '--database', db),
    ]
    for args in listings:
        code, out, err = run(capsys, *args, '--scope', 'me', '--json')
        assert code == 0, (args, err)
        assert out.startswith('['), (args, out, err)
        assert [r['conversation_id'] for r in json.loads(out)] == ['conv-b', 'conv-a'], args
    code, out, err = run(capsys, 'db', '-d', db, 'path')
    assert code == 0 and out.strip() == db, err


def test_audit_names_what_is_missing(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, 'audit', 'missing.json', '--db', db, '--scope', 'me')
    assert code == 1 and err.strip() == 'error: no such file: missing.json'
    code, _, err = run(capsys, 'audit', 'conv-c', '--db', db, '--scope', 'me')  # another scope's: not found
    assert code == 1 and err.strip() == "error: no conversation 'conv-c' in scope 'me', and no file of that name"


def in_terminal(args: list[str], columns: int = 80, *, raw: bool = False, **env_extra: str) -> str:
    """Run `threadline args` with its output on a pseudo-terminal `columns` wide; what it printed."""
    import os
    import subprocess
    import sys

    leader, follower = os.openpty()
    env = {**os.environ, 'COLUMNS': str(columns), 'LINES': '50', 'TERM': 'xterm', **env_extra}
    process = subprocess.run(
        [sys.executable, '-m', 'threadline', *args],
        stdin=follower,
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
        timeout=60,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.returncode == 0, process.stderr
    text = b''.join(chunks).decode()
    return text if raw else re.sub(r'\x1b\[[0-9;]*m', '', text)


def test_list_fits_80_columns_one_line_each_and_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / 'many.db')
    store = SQLiteStore(path)
    long_title = 'Please help me plan a long trip across several countries in Europe next spring'
    for k in range(25):
        store.sync.append(f'c{k:02d}', turn(k, conversation_id=f'c{k:02d}', text=long_title), scope='me')
    store.close()
    lines = [
        line for line in in_terminal(['conversations', 'list', '--db', path, '--scope', 'me']).splitlines() if line
    ]
    assert len(lines) == 20 and all(len(line) <= 80 for line in lines), lines
    assert lines[0].startswith('c24  ') and lines[0].endswith('…') and TIME.search(lines[0])
    code, out, err = run(capsys, 'conversations', 'list', '--db', path, '--scope', 'me')
    assert code == 0 and err.strip() == '20 of 25 (use -n 0 for all)'
    stored_title = SQLiteStore(path).sync.list('me', limit=1)[0].title
    assert stored_title and stored_title in out.splitlines()[0]  # piped: titles are whole
    code, out, err = run(capsys, 'conversations', 'list', '--db', path, '--scope', 'me', '-n', '0', '-s')
    assert code == 0 and err == '' and len(out.splitlines()) == 25 and out.splitlines()[0].startswith('c24  ')
    code, _, err = run(capsys, 'conversations', 'list', '--db', path, '--scope', 'me', '--count', '-3')
    assert code == 2 and 'must be 0 (all) or more' in err


def test_prune_dry_run_lists_exactly_what_prune_deletes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / 'prune.db')
    store = SQLiteStore(path)
    for k in range(6):
        store.sync.append(f'p{k}', turn(k, conversation_id=f'p{k}'), scope='me')
    store.sync.append('other', turn(9, conversation_id='other'), scope='them')
    store.close()
    code, out, _ = run(capsys, 'conversations', 'prune', '--keep-last', '2', '--dry-run', '--db', path, '--scope', 'me')
    listed = [line.split()[0] for line in out.splitlines() if line.startswith('p')]
    assert code == 0 and out.splitlines()[-1] == "would delete 4 conversation(s) in scope 'me'"
    assert sorted(listed) == ['p0', 'p1', 'p2', 'p3']
    assert len(SQLiteStore(path).sync.list('me')) == 6  # a dry run deletes nothing
    twin = str(tmp_path / 'twin.db')  # the same data, pruned by the store itself
    import shutil

    for suffix in ('', '-wal', '-shm'):
        if Path(path + suffix).exists():
            shutil.copy(path + suffix, twin + suffix)
    by_store = SQLiteStore(twin).sync.prune(keep_last=2, scope='me')
    code, out, _ = run(capsys, 'conversations', 'prune', '--keep-last', '2', '--json', '--db', path, '--scope', 'me')
    assert code == 0 and sorted(json.loads(out)['deleted']) == sorted(by_store) == sorted(listed)
    assert sorted(r.conversation_id for r in SQLiteStore(path).sync.list('me')) == ['p4', 'p5']
    assert [r.conversation_id for r in SQLiteStore(path).sync.list('them')] == ['other']
    code, _, err = run(capsys, 'conversations', 'prune', '--db', path, '--scope', 'me')
    assert code == 2 and '--older-than AGE, --keep-last N, or both' in err


def test_prune_asks_at_a_terminal(tmp_path: Path) -> None:
    """In a pseudo-terminal, prune shows the count and waits for y/n; 'n' deletes nothing."""
    import os
    import pty
    import subprocess
    import sys

    path = str(tmp_path / 'ask.db')
    store = SQLiteStore(path)
    for k in range(3):
        store.sync.append(f'a{k}', turn(k, conversation_id=f'a{k}'), scope='me')
    store.close()
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [
            sys.executable,
            '-m',
            'threadline',
            'conversations',
            'prune',
            '--keep-last',
            '1',
            '--db',
            path,
            '--scope',
            'me',
        ],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**os.environ, 'COLUMNS': '80'},
    )
    os.close(follower)
    seen = b''
    while b'[y/N]' not in seen:
        seen += os.read(leader, 1024)
    assert b"delete 2 conversation(s) in scope 'me'?" in seen
    os.write(leader, b'n\n')
    assert process.wait(timeout=30) == 1
    os.close(leader)
    assert len(SQLiteStore(path).sync.list('me')) == 3


def test_search_highlights_matches_at_a_terminal_and_documents_its_syntax(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = in_terminal(['conversations', 'search', 'refund', '--db', db, '--scope', 'me'], raw=True)
    plain = re.sub(r'\x1b\[[0-9;]*m', '', raw)
    assert 'conv-a #' in plain and '[refund]' not in plain  # the markers became colour
    assert re.search(r'\x1b\[[0-9;]*1;33m[^\x1b]*refund', raw, re.IGNORECASE) or re.search(
        r'\x1b\[[0-9;]*33;1m[^\x1b]*refund', raw, re.IGNORECASE
    ), raw
    code, out, _ = run(capsys, 'conversations', 'search', '--help')
    assert code == 0 and '"order 42"' in out and 'refun*' in out and 'never as operators' in out
    code, out, _ = run(capsys, 'conversations', 'search', 'refund', '--db', db, '--scope', 'me', '--json')
    hits = json.loads(out)
    assert len({(h['conversation_id'], h['position']) for h in hits}) == len(hits) > 0  # no duplicates
    assert all(h['timestamp'].endswith('Z') for h in hits)


def test_chat_multi_line_exit_and_the_unknown_cid_notice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / 'chat2.db')
    process, leader = spawn(['chat', '-m', 'test', '--db', db, '--scope', 'me', '--cid', 'named'])
    try:
        banner = _read_until(leader, b'you> ')
        assert b"no conversation found with id=named in scope 'me': starting it" in banner
        os.write(leader, b'!multi\n')
        _read_until(leader, b'... ')
        os.write(leader, b'first line\nsecond line\n!end\n')
        assert b'assistant> ' in _read_until(leader, b'you> ')
        os.write(leader, b'exit\n')
        assert b'saved as named' in _read_until(leader, b'saved as')
        assert process.wait(timeout=20) == 0
    finally:
        process.kill()
        os.close(leader)
    stored = SQLiteStore(db).sync.load('named', scope='me').messages
    assert stored[0].parts[-1].content == 'first line\nsecond line'  # one message, two lines


def test_prompt_answers_once_and_stores_the_turn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / 'prompt.db')
    code, out, err = run(capsys, 'prompt', 'hello there', '-m', 'test', '--db', db, '--scope', 'me')
    assert code == 0 and out.strip() == 'success (no tool calls)' and err.startswith('(conversation ')
    first = err.strip()[len('(conversation ') : -1]
    code, out, err = run(
        capsys, 'prompt', 'and again', '-c', '-m', 'test', '-o', 'temperature', '0.1', '--db', db, '--scope', 'me'
    )
    assert code == 0 and err.strip() == f'(conversation {first})'
    stored = SQLiteStore(db).sync.load(first, scope='me').messages
    assert [p.content for m in stored for p in m.parts if p.part_kind == 'user-prompt'] == ['hello there', 'and again']
    code, _, err = run(capsys, 'prompt', 'x', '-c', '-m', 'test', '--db', db, '--scope', 'empty')
    assert code == 1 and "no conversation to continue in scope 'empty'" in err
    code, _, err = run(capsys, 'prompt', 'x', '-s', 'Be brief.', '--db', db, '--scope', 'me')  # demo model
    assert code == 2 and '-s/--system is for provider models' in err


def test_a_missing_postgres_database_is_named_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    url = os.environ.get('THREADLINE_TEST_POSTGRES_URL')
    if not url:
        pytest.skip('THREADLINE_TEST_POSTGRES_URL is not set (CI sets it; export it to run PostgreSQL tests)')
    missing = url.rsplit('/', 1)[0] + '/threadline_no_such_database'
    started = time.monotonic()
    code, _, err = run(capsys, 'conversations', 'list', '--db', missing)
    assert code == 1 and 'database "threadline_no_such_database" does not exist' in err
    assert time.monotonic() - started < 5  # not the pool's 10-second timeout
    assert err.count('\n') == 1  # one line, no pool noise


def test_show_the_last_response_or_its_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from threadline import ModelRequest, ModelResponse, TextPart, UserPromptPart

    path = str(tmp_path / 'code.db')
    answer = 'Here it is:\n\n```python\nprint("hi")\nprint("there")\n```\n\nAnything else?'
    SQLiteStore(path).sync.append(
        'code',
        [ModelRequest(parts=[UserPromptPart('write code')]), ModelResponse(parts=[TextPart(answer)])],
        scope='me',
    )
    code, out, _ = run(capsys, 'conversations', 'show', 'code', '--response', '--db', path, '--scope', 'me')
    assert code == 0 and out == answer + '\n'
    code, out, _ = run(capsys, 'conversations', 'show', 'code', '-x', '--db', path, '--scope', 'me')
    assert code == 0 and out == 'print("hi")\nprint("there")\n'


def test_show_gives_every_part_whole_wrapped_and_short_cuts_with_an_ellipsis(tmp_path: Path) -> None:
    from threadline import ModelRequest, ModelResponse, TextPart, UserPromptPart

    path = str(tmp_path / 'long.db')
    asked = 'please [bold]quote[/bold] this ' + 'word ' * 40 + 'END-OF-QUESTION'
    answer = '# Plan\n\nIt has **two** steps:\n\n- first\n- second\n\n' + 'more ' * 40 + 'END-OF-ANSWER'
    SQLiteStore(path).sync.append(
        'long', [ModelRequest(parts=[UserPromptPart(asked)]), ModelResponse(parts=[TextPart(answer)])], scope='me'
    )
    args = ['conversations', 'show', 'long', '--db', path, '--scope', 'me']
    whole = in_terminal(args, columns=60).replace('\r\n', '\n')
    lines = whole.splitlines()
    assert all(len(line) <= 60 for line in lines) and all(line == line.rstrip() for line in lines)
    assert 'END-OF-QUESTION' in whole and 'END-OF-ANSWER' in whole  # nothing cut
    assert '[bold]quote[/bold]' in whole  # a message's text is never read as markup
    assert '• first' in whole and '**two**' not in whole and '# Plan' not in whole  # the answer is Markdown
    short = in_terminal([*args, '--short'], columns=60).replace('\r\n', '\n').splitlines()
    assert len(short) == 3 and all(len(line) <= 60 for line in short)
    assert all(line.endswith('…') for line in short[1:]) and 'END-OF' not in ''.join(short)


def test_show_pages_a_long_conversation_at_a_terminal(db: str) -> None:
    paged = in_terminal(
        ['conversations', 'show', 'conv-a', '--db', db, '--scope', 'me'], LINES='3', PAGER='sed s/^/PAGED:/'
    )
    assert 'PAGED:conv-a  revision' in paged
    whole = in_terminal(['conversations', 'show', 'conv-a', '--db', db, '--scope', 'me'], PAGER='sed s/^/PAGED:/')
    assert 'PAGED:' not in whole and 'conv-a  revision' in whole  # it fits the screen: no pager


def test_the_demo_defines_its_terms_and_its_try_lines_work(tmp_path: Path) -> None:
    import shlex
    import subprocess
    import sys

    env = {**os.environ, 'THREADLINE_HOME': str(tmp_path / 'home')}
    env.pop('UV_RUN_RECURSION_DEPTH', None)  # run directly: the try lines then say `threadline`
    bin_dir = str(Path(sys.executable).parent)
    env['PATH'] = bin_dir + os.pathsep + env.get('PATH', '')
    demo = subprocess.run(
        [sys.executable, '-m', 'threadline', 'demo', '--db', str(tmp_path / 'demo.db')],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert demo.returncode == 0, demo.stderr
    out = demo.stdout
    for term in (
        'the revision counts writes',
        'the ledger records each tool call',
        'the idempotency key is',
        'authority is who vouches',
        'the outcome receipt records',
        'seven cases of the replay audit',
    ):
        assert term in out, term
    assert 'document 004' not in out and 'reset on every run' in out
    tries = [line.strip().removeprefix('try:').strip() for line in out.splitlines() if 'THREADLINE_HOME=' in line]
    assert len(tries) == 4 and all(' threadline ' in t for t in tries)
    for line in tries[:3]:  # as printed (the last one opens an interactive chat)
        words = shlex.split(line)
        home, command = words[0].split('=', 1)[1], words[1:]
        ran = subprocess.run(command, capture_output=True, text=True, env={**env, 'THREADLINE_HOME': home}, timeout=60)
        assert ran.returncode == 0, (line, ran.stderr)


def test_chat_asks_before_a_tool_that_needs_approval(tmp_path: Path) -> None:
    """The demo model's refund needs approval in chat: it is asked, with the arguments, y or n."""
    db = str(tmp_path / 'approve.db')
    payments = tmp_path / 'chat-payments.jsonl'
    process, leader = spawn(['chat', '--db', db, '--scope', 'me'], THREADLINE_HOME=str(tmp_path / 'home'))
    try:
        _read_until(leader, b'you> ')
        os.write(leader, b'Please refund order 42.\n')
        asked = _read_until(leader, b'[y/N]')
        assert b'allow issue_refund({"order_id":"42","amount":20})?' in asked
        os.write(leader, b'n\n')
        denied = _read_until(leader, b'you> ')
        assert b'assistant> ' in denied
        assert not payments.exists() or payments.read_text() == ''  # nothing was refunded
        os.write(leader, b'Please refund order 42.\n')
        _read_until(leader, b'[y/N]')
        os.write(leader, b'y\n')
        assert b'refunded 20 for order 42' in _read_until(leader, b'you> ')
        os.write(leader, b'quit\n')
        assert process.wait(timeout=20) == 0
    finally:
        process.kill()
        os.close(leader)
    assert len(payments.read_text().splitlines()) == 1  # one refund, the approved one


def test_json_on_every_write_command_and_db_verify(db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3

    base = ('--db', db, '--scope', 'me', '--json')
    code, out, _ = run(capsys, 'conversations', 'fork', 'conv-a', *base)
    forked = json.loads(out)
    assert code == 0 and forked['forked_from'] == 'conv-a' and forked['conversation_id'] != 'conv-a'
    code, out, _ = run(capsys, 'conversations', 'delete', forked['conversation_id'], *base)
    assert code == 0 and json.loads(out) == {'deleted': forked['conversation_id']}
    exported = tmp_path / 'a.json'
    code, out, _ = run(capsys, 'conversations', 'export', 'conv-a', '--db', db, '--scope', 'me')
    exported.write_text(out)
    code, out, _ = run(capsys, 'conversations', 'import', str(exported), '--cid', 'copy-a', *base)
    assert code == 0 and json.loads(out)['imported'] == 4
    code, out, _ = run(capsys, 'conversations', 'import', str(exported), '--cid', 'conv-a', *base)
    assert code == 0 and json.loads(out) == {'conversation_id': 'conv-a', 'imported': 0}
    code, out, _ = run(capsys, 'conversations', 'prune', '--keep-last', '2', '--dry-run', *base)
    assert code == 0 and json.loads(out) == {'deleted': ['conv-a'], 'dry_run': True}
    code, out, _ = run(capsys, 'db', 'status', *base)
    assert code == 0 and json.loads(out)['conversations'] == 3
    code, out, _ = run(capsys, 'db', 'verify', *base)
    assert code == 0 and all(r['ok'] for r in json.loads(out)) and len(json.loads(out)) == 3
    with sqlite3.connect(db) as conn:  # moved to this tenant behind the store's back
        conn.execute("UPDATE conversations SET scope = 'me' WHERE id = 'conv-c'")
    code, out, _ = run(capsys, 'db', 'verify', '--db', db, '--scope', 'me')
    assert code == 1 and 'conv-c' in out and '3 of 4 conversation(s)' in out


def test_an_empty_scope_says_which_scopes_hold_conversations(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, 'conversations', 'list', '--db', db, '--scope', 'nobody')
    assert code == 0 and out == ''
    assert (
        err.strip()
        == "scope 'nobody' holds no conversations; --scope me holds 2 conversations, --scope someone-else holds 1 conversation"
    )


def test_list_usage_model_latest_and_truncate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from threadline import Agent, ModelResponse, TextPart
    from threadline.models.function import FunctionModel
    from threadline.models.test import TestModel

    path = str(tmp_path / 'models.db')
    store = SQLiteStore(path)
    for name, model in (
        ('by-test', TestModel()),
        ('by-function', FunctionModel(lambda m, i: ModelResponse(parts=[TextPart('x ' * 60)]))),
    ):
        result = Agent(model).run_sync('a question ' * 20, conversation_id=name)
        store.sync.save(result, scope='me')
    store.close()
    base = ('--db', path, '--scope', 'me')
    code, out, _ = run(capsys, 'conversations', 'list', '-u', '--json', *base)
    rows = {r['conversation_id']: r for r in json.loads(out)}
    assert (
        code == 0 and rows['by-test']['usage']['input_tokens'] > 0 and rows['by-function']['usage']['output_tokens'] > 0
    )
    code, out, _ = run(capsys, 'conversations', 'list', '-u', *base)
    assert ' in ' in out and ' out ' in out
    code, out, _ = run(capsys, 'conversations', 'list', '-m', 'test', '-s', *base)
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ['by-test']
    code, out, err = run(capsys, 'conversations', 'list', '-l', '-s', *base)
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == ['by-function'] and '1 of 2' in err
    code, out, _ = run(capsys, 'conversations', 'list', '-t', *base)
    assert all(len(line) <= 80 for line in out.splitlines()) and any(line.endswith('…') for line in out.splitlines())


def test_audit_names_the_command_that_fixes_an_interrupted_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import UTC, datetime

    from threadline import ModelRequest, ModelResponse, SystemPromptPart, ToolCallPart, UserPromptPart
    from threadline.storage import ToolEffect

    path = str(tmp_path / 'fix.db')
    store = SQLiteStore(path)
    history = [
        ModelRequest(parts=[SystemPromptPart('You are support.'), UserPromptPart('refund order 9')], run_id='r1'),
        ModelResponse(parts=[ToolCallPart('issue_refund', {'order_id': '9'}, 'call-9')], run_id='r1'),
    ]
    store.sync.append('c9', history, scope='me')
    store.sync.register_run('r1', conversation_id='c9', scope='me')
    started = ToolEffect('r1', 'call-9', 'issue_refund', 'started', datetime.now(tz=UTC), idempotency_key='refund-9')
    store.sync.record_tool_effect(started, conversation_id='c9', scope='me')
    store.close()
    base = ('--db', path, '--scope', 'me')
    code, out, _ = run(capsys, 'audit', 'c9', *base)
    assert (
        code != 0
        and "fix: threadline reconcile c9 call-9 --result '…' --evidence '…' (look it up by 'refund-9')" in out
    )
    code, out, _ = run(
        capsys, 'reconcile', 'c9', 'call-9', '--result', 'refunded (pay-9)', '--evidence', 'payments:refund-9', *base
    )
    assert code == 0 and out.startswith('reconciled call-9 in c9')
    code, out, _ = run(capsys, 'audit', 'c9', *base)
    assert code == 0 and 'verdict: READY' in out and 'fix:' not in out
    code, out, _ = run(
        capsys, 'outcome', 'c9', '--expected', 'refund order 9', '--evidence', 'payments:pay-9', '--json', *base
    )
    assert code == 0 and json.loads(out)['expected_effect'] == 'refund order 9'


def test_long_operations_show_a_progress_bar_at_a_terminal_and_none_when_piped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Import (10k messages), backup, verify and prune across scopes draw a rich bar on a terminal
    that they erase when done; piped, they print only their result."""
    history = [m for k in range(2500) for m in turn(k, conversation_id='big')]
    assert len(history) == 10_000
    (tmp_path / 'h.json').write_bytes(ModelMessagesTypeAdapter.dump_json(history))
    db = str(tmp_path / 'bars.db')
    steps = {
        'importing h.json': ['conversations', 'import', str(tmp_path / 'h.json')],
        'backing up bars.db': ['db', 'backup', str(tmp_path / 'copy.db')],
        'verifying': ['db', 'verify'],
        'pruning every scope': ['conversations', 'prune', '--all-scopes', '-y', '--keep-last', '0'],
    }
    for label, args in steps.items():
        raw = in_terminal([*args, '--db', db, '--scope', 'me'], raw=True)
        assert label in raw and '━' in raw and '100%' in raw, (label, raw[-400:])
    assert SQLiteStore(str(tmp_path / 'copy.db')).sync.load('big', scope='me').length == 10_000
    code, out, err = run(capsys, 'conversations', 'import', str(tmp_path / 'h.json'), '--db', db, '--scope', 'me')
    assert code == 0 and out.strip() == 'big' and '━' not in out + err


def test_model_errors_speak_in_flags(
    db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv('OPENAI_API_KEY', raising=False)
    code, _, err = run(capsys, 'prompt', 'hi', '-m', 'nosuch:model', '--db', db, '--scope', 'me')
    assert code == 1 and "-m 'nosuch:model': not a model; use -m demo, -m test" in err
    code, _, err = run(capsys, 'prompt', 'hi', '-m', 'openai:gpt-5.2', '--db', db, '--scope', 'me')
    assert (
        code == 1
        and 'set OPENAI_API_KEY, run threadline keys set openai, or pass --key' in err
        and 'api_key=' not in err
    )


def test_a_usage_error_says_how_to_call_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, 'conversations', 'show')
    assert (code, out) == (2, '')
    assert err.splitlines() == [
        'Usage: threadline conversations show [OPTIONS] CONVERSATION_ID',
        "Try 'threadline conversations show --help' for help.",
        '',
        "error: Missing argument 'CONVERSATION_ID'.",
    ]
    code, _, err = run(capsys, 'prompt', '--bogus', 'x')
    assert code == 2 and err.startswith('Usage: threadline prompt [OPTIONS] [TEXT]\n')
    assert err.endswith("error: No such option '--bogus'.\n")


def test_db_status_names_seal_keys_this_machine_does_not_hold(
    db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, 'db', 'status', '--db', db, '--scope', 'me', '--json')
    assert code == 0 and json.loads(out)['unknown_seal_keys'] == []
    monkeypatch.setenv('THREADLINE_STORE_KEYS', 'k-elsewhere=' + 'ab' * 32)
    code, out, _ = run(capsys, 'db', 'status', '--db', db, '--scope', 'me')
    [line] = [line for line in out.splitlines() if line.startswith('seals by keys not held here:')]
    assert 'install-' in line and 'audits of what they seal will fail' in line
