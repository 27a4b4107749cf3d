"""`threadline serve` as a newcomer starts it: no configuration, loopback, the demo model."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return int(s.getsockname()[1])


def serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    db = [] if '--db' in args else ['--db', str(tmp_path / 's.db')]
    command = [sys.executable, '-m', 'threadline.cli', 'serve', *db, *args]
    environment = {**os.environ, 'PYTHONPATH': str(ROOT / 'src'), 'THREADLINE_HOME': str(tmp_path), **(env or {})}
    if env is None:
        environment.pop('THREADLINE_API_KEYS', None)  # dev mode: no keys from the caller's shell
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)


def wait_until_up(url: str, process: subprocess.Popen[str]) -> None:
    for _ in range(100):
        if process.poll() is not None:
            raise AssertionError(f'the server exited: {process.stderr.read() if process.stderr else ""}')
        try:
            if httpx.get(url + '/healthz', timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError('the server did not come up')


def test_serve_starts_with_no_configuration(tmp_path: Path) -> None:
    port = free_port()
    process = serve(tmp_path, '--port', str(port))
    try:
        url = f'http://127.0.0.1:{port}'
        wait_until_up(url, process)
        turn = {'id': 'c1', 'messages': [{'id': 'u', 'role': 'user', 'parts': [{'type': 'text', 'text': 'hello'}]}]}
        response = httpx.post(url + '/api/chat', json=turn, timeout=30)
        assert (
            response.status_code == 200 and 'text-delta' in response.text and response.text.endswith('data: [DONE]\n\n')
        )
        listed = httpx.get(url + '/api/conversations', timeout=10).json()
        assert [c['id'] for c in listed['conversations']] == ['c1']
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=30)
    assert 'dev mode' in out and '127.0.0.1' in out


def test_serve_refuses_other_addresses_without_keys(tmp_path: Path) -> None:
    process = serve(tmp_path, '--host', '0.0.0.0', '--port', str(free_port()))
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2 and 'without API keys' in err


def test_serve_refuses_other_addresses_without_a_shared_store_key(tmp_path: Path) -> None:
    env = {'THREADLINE_API_KEYS': 'k=t', 'THREADLINE_STORE_KEYS': '', 'THREADLINE_STORE_KEYS_FILE': ''}
    process = serve(tmp_path, '--host', '0.0.0.0', '--port', str(free_port()), env=env)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2 and 'without a store key' in err and 'THREADLINE_STORE_KEYS' in err
    port = free_port()
    shared = serve(
        tmp_path, '--host', '0.0.0.0', '--port', str(port), env={**env, 'THREADLINE_STORE_KEYS': 'k1=' + '5a' * 32}
    )
    try:
        wait_until_up(f'http://127.0.0.1:{port}', shared)  # with the shared key it serves
    finally:
        shared.terminate()
        shared.communicate(timeout=30)


def test_keys_come_from_the_environment_and_are_enforced(tmp_path: Path) -> None:
    port = free_port()
    process = serve(tmp_path, '--port', str(port), env={'THREADLINE_API_KEYS': 'k-secret-1=tenant-a'})
    try:
        url = f'http://127.0.0.1:{port}'
        wait_until_up(url, process)
        assert httpx.get(url + '/api/conversations', timeout=10).status_code == 401
        ok = httpx.get(url + '/api/conversations', headers={'x-api-key': 'k-secret-1'}, timeout=10)
        assert ok.status_code == 200
    finally:
        process.terminate()
        out, err = process.communicate(timeout=30)
    assert 'k-secret-1' not in out + err  # keys are never logged


def test_serve_stateless_signs_what_the_client_holds(tmp_path: Path) -> None:
    import json

    port = free_port()
    process = serve(tmp_path, '--port', str(port), '--stateless')
    try:
        url = f'http://127.0.0.1:{port}'
        wait_until_up(url, process)
        turn = {'id': 'c1', 'messages': [{'id': 'u', 'role': 'user', 'parts': [{'type': 'text', 'text': 'hello'}]}]}
        response = httpx.post(url + '/api/chat', json=turn, timeout=30)
        data = [json.loads(line[6:]) for line in response.text.split('\n\n') if line.startswith('data: {')]
        held = next(c for c in data if c['type'] == 'data-threadline')['data']
        assert held['envelope']['key_id'] == 'ephemeral' and len(held['history']) == 2
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=30)
    assert 'signed with a key made for this process' in out


def test_serve_says_at_start_up_when_seals_carry_a_key_it_does_not_hold(tmp_path: Path) -> None:
    from threadline.storage import SQLiteStore
    from threadline.storage.testing import turn
    from threadline.trust.sealing import StoreSeal

    old = StoreSeal.from_environment({'THREADLINE_STORE_KEYS': 'k-old=' + '11' * 32, 'THREADLINE_HOME': str(tmp_path)})
    SQLiteStore(tmp_path / 's.db', seal=old).sync.append('c1', turn(0, conversation_id='c1'), scope='local')
    port = free_port()
    process = serve(tmp_path, '--port', str(port), env={'THREADLINE_STORE_KEYS': 'k-new=' + '22' * 32})
    try:
        wait_until_up(f'http://127.0.0.1:{port}', process)
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
    [warning] = [line for line in err.splitlines() if line.startswith('warning:')]
    assert 'key id(s) k-old' in warning and 'UNTRUSTED_HISTORY' in warning and 'THREADLINE_STORE_KEYS' in warning
    assert '11' * 8 not in err and '22' * 8 not in err  # key ids, never keys
