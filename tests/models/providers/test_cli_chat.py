"""`threadline chat -m openai:<model>` against the local server, as a user would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.models.providers.conftest import assert_valid_openai
from tests.models.providers.server import ProviderServer, fixture


def _chat(tmp_path: Path, env: dict[str, str], stdin: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        '-m',
        'threadline.cli',
        'chat',
        '-m',
        'openai:gpt-5.2',
        '--db',
        str(tmp_path / 'chat.db'),
        '--cid',
        'chat-openai',
    ]
    return subprocess.run(
        command, input=stdin, capture_output=True, text=True, timeout=60, env={**os.environ, 'COLUMNS': '200', **env}
    )


def test_chat_with_an_openai_compatible_server(server: ProviderServer, tmp_path: Path) -> None:
    server.queue(fixture('openai_stream.json'), fixture('openai_stream.json'))
    done = _chat(
        tmp_path, {'OPENAI_BASE_URL': server.url + '/v1', 'OPENAI_API_KEY': 'k'}, 'Weather?\nAnd tomorrow?\n/quit\n'
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count('assistant> Hello there') == 2
    second = server.bodies()[1]
    assert_valid_openai(second)
    assert [m['role'] for m in second['messages']] == ['system', 'user', 'assistant', 'user']
    assert second['messages'][-1] == {'role': 'user', 'content': 'And tomorrow?'}

    shown = subprocess.run(
        [
            sys.executable,
            '-m',
            'threadline.cli',
            'conversations',
            'show',
            'chat-openai',
            '--db',
            str(tmp_path / 'chat.db'),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert 'And tomorrow?' in shown.stdout


def test_chat_without_a_key_says_which_variable_to_set(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != 'OPENAI_API_KEY'}
    env['THREADLINE_HOME'] = str(tmp_path / 'home')  # no key stored there either
    done = subprocess.run(
        [sys.executable, '-m', 'threadline.cli', 'chat', '-m', 'openai:gpt-5.2', '--db', str(tmp_path / 'chat.db')],
        input='hi\n',
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        'error: the openai provider needs an API key: set OPENAI_API_KEY, run threadline keys set openai, or pass --key'
    ]


def test_a_stored_key_is_used_when_the_environment_has_none(server: ProviderServer, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != 'OPENAI_API_KEY'}
    env['THREADLINE_HOME'] = str(tmp_path / 'home')
    cli = [sys.executable, '-m', 'threadline.cli', 'keys']
    stored = subprocess.run([*cli, 'set', 'openai'], input='sk-stored-1\n', capture_output=True, text=True, env=env)
    assert stored.returncode == 0 and stored.stdout == '' and 'sk-stored-1' not in stored.stderr
    keys = Path(env['THREADLINE_HOME']) / 'keys.json'
    assert oct(keys.stat().st_mode & 0o777) == '0o600'
    listed = subprocess.run([*cli, 'list'], capture_output=True, text=True, env=env)
    assert listed.stdout == 'openai\n'  # the provider, never the key
    server.queue(fixture('openai_stream.json'))
    done = _chat(tmp_path, {**env, 'OPENAI_BASE_URL': server.url + '/v1'}, 'Weather?\n/quit\n')
    assert done.returncode == 0, done.stderr
    assert server.requests[-1]['headers']['authorization'] == 'Bearer sk-stored-1'


def test_a_model_error_in_chat_is_one_line_and_the_message_is_kept(server: ProviderServer, tmp_path: Path) -> None:
    unauthorized = {'source': 'an OpenAI 401 body', 'status': 401, 'body': {'error': {'message': 'bad key'}}}
    server.queue(unauthorized, unauthorized, fixture('openai_stream.json'))
    # 401, then 401 again on the kept message (Enter), then an answer to it (Enter again).
    done = _chat(tmp_path, {'OPENAI_BASE_URL': server.url + '/v1', 'OPENAI_API_KEY': 'k'}, 'Weather?\n\n\n/quit\n')
    assert done.returncode == 0, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith('error:')]
    assert (
        errors
        == [
            'error: openai answered HTTP 401: bad key (check the API key: OPENAI_API_KEY, threadline keys set openai, '
            'or --key) (your message was not sent)'
        ]
        * 2
    )
    assert 'Traceback' not in done.stderr
    assert done.stdout.count('assistant> Hello there') == 1
    assert [m['content'] for m in server.bodies()[-1]['messages'] if m['role'] == 'user'] == ['Weather?']


def test_prompt_with_a_key_on_the_command_line(server: ProviderServer, tmp_path: Path) -> None:
    server.queue(fixture('openai_stream.json'))
    env = {k: v for k, v in os.environ.items() if k != 'OPENAI_API_KEY'}
    env['OPENAI_BASE_URL'] = server.url + '/v1'
    done = subprocess.run(
        [
            sys.executable,
            '-m',
            'threadline',
            'prompt',
            'Weather?',
            '-m',
            'openai:gpt-5.2',
            '--key',
            'sk-from-flag',
            '-s',
            'Answer in one line.',
            '--db',
            str(tmp_path / 'p.db'),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'Hello there\n'  # streamed as it came; stdout holds the answer alone
    assert server.requests[0]['headers']['authorization'] == 'Bearer sk-from-flag'
    assert server.bodies()[0]['stream'] is True
    assert server.bodies()[0]['messages'][0] == {'role': 'system', 'content': 'Answer in one line.'}


def test_a_provider_that_cannot_be_reached_names_its_base_url(tmp_path: Path) -> None:
    env = {**os.environ, 'OPENAI_BASE_URL': 'http://127.0.0.1:9/v1', 'OPENAI_API_KEY': 'k', 'COLUMNS': '200'}
    done = subprocess.run(
        [sys.executable, '-m', 'threadline', 'prompt', 'hi', '-m', 'openai:gpt-5.2', '--db', str(tmp_path / 'p.db')],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1 and done.stdout == ''
    assert done.stderr.splitlines() == [
        'error: could not reach openai at http://127.0.0.1:9/v1/ (check OPENAI_BASE_URL and the network)'
    ]
